"""The ACL admin codes on the broker (50-54): edit plain_acl.yml and report its version.

UPDATE_AND_CREATE_ACL_CONFIG, DELETE_ACL_CONFIG and UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
answer SUCCESS or their own failure code (209, 210, 211) with the reason as
remark. GET_BROKER_CLUSTER_ACL_INFO answers the data version in response
fields; GET_BROKER_CLUSTER_ACL_CONFIG the accounts and white list as a JSON
body. When ACL is off the file is not managed and the codes answer that.
"""

from __future__ import annotations

from collections.abc import Callable

from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.plain_config import AccountUpdate
from orbitmq.broker.acl.validator import AclValidator
from orbitmq.broker.handlers.fields import Registry, boolean, optional_text, text
from orbitmq.common.jsonbody import dumps
from orbitmq.errors import BrokerError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    return [item.strip() for item in value.split(",") if item.strip()]


class AclHandlers:
    """Serves codes 50-54 for one broker; `validator` is None when aclEnable is false."""

    def __init__(
        self,
        validator: AclValidator | None,
        identity: Callable[[], tuple[str, str, str]],
    ) -> None:
        self.validator = validator
        #: (clusterName, brokerName, brokerAddr), read per request (the port may be resolved late).
        self.identity = identity

    def register(self, server: Registry) -> None:
        server.register(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, self.update_account)
        server.register(RequestCode.DELETE_ACL_CONFIG, self.delete_account)
        server.register(RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, self.update_global_white)
        server.register(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, self.version_info)
        server.register(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, self.acl_config)

    def _validator(self, failure: int) -> AclValidator:
        if self.validator is None:
            raise BrokerError.for_code(failure, "ACL is not enabled on this broker (aclEnable=false)")
        return self.validator

    async def update_account(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        failed = ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        validator = self._validator(failed)
        update = AccountUpdate(
            access_key=text(request, "accessKey"),
            secret_key=optional_text(request, "secretKey"),
            white_remote_address=request.field("whiteRemoteAddress"),
            admin=boolean(request, "admin"),
            default_topic_perm=optional_text(request, "defaultTopicPerm"),
            default_group_perm=optional_text(request, "defaultGroupPerm"),
            topic_perms=_split(request.field("topicPerms")),
            group_perms=_split(request.field("groupPerms")),
        )
        try:
            validator.update_account(update)
        except (AclError, OSError) as exc:
            raise BrokerError.for_code(failed, str(exc)) from None
        return request.response(ResponseCode.SUCCESS)

    async def delete_account(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        failed = ResponseCode.DELETE_ACL_CONFIG_FAILED
        validator = self._validator(failed)
        access_key = text(request, "accessKey")
        try:
            validator.delete_account(access_key)
        except (AclError, OSError) as exc:
            raise BrokerError.for_code(failed, f"The accesskey[{access_key}] could not be deleted: {exc}") from None
        return request.response(ResponseCode.SUCCESS)

    async def update_global_white(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        failed = ResponseCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED
        validator = self._validator(failed)
        addrs = _split(request.field("globalWhiteAddrs"))
        if addrs is None:
            raise BrokerError.for_code(failed, "the custom field <globalWhiteAddrs> is null")
        path = optional_text(request, "aclFileFullPath")
        if path is not None and path != validator.path:
            raise BrokerError.for_code(failed, f"this broker manages one ACL file, {validator.path}, not {path}")
        try:
            validator.set_global_white(addrs)
        except (AclError, OSError) as exc:
            raise BrokerError.for_code(failed, str(exc)) from None
        return request.response(ResponseCode.SUCCESS)

    async def version_info(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        validator = self._validator(ResponseCode.SYSTEM_ERROR)
        cluster, name, addr = self.identity()
        acl = validator.acl
        version = acl.version_json
        fields = {
            "version": version,
            "allAclFileVersion": dumps({validator.path: {"counter": acl.counter, "timestamp": acl.timestamp}}).decode(),
            "brokerName": name,
            "brokerAddr": addr,
            "clusterName": cluster,
        }
        return request.response(ResponseCode.SUCCESS, ext_fields=fields)

    async def acl_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        validator = self._validator(ResponseCode.SYSTEM_ERROR)
        acl = validator.acl
        configs = []
        for account in acl.accounts.values():
            raw = account.raw
            configs.append({
                "accessKey": account.access_key,
                "secretKey": account.secret_key,
                "whiteRemoteAddress": raw.get("whiteRemoteAddress"),
                "admin": account.admin,
                "defaultTopicPerm": raw.get("defaultTopicPerm"),
                "defaultGroupPerm": raw.get("defaultGroupPerm"),
                "topicPerms": [str(p) for p in raw.get("topicPerms") or []],
                "groupPerms": [str(p) for p in raw.get("groupPerms") or []],
            })
        body = dumps({"globalWhiteAddrs": list(acl.global_white_addrs), "plainAccessConfigs": configs})
        return request.response(ResponseCode.SUCCESS, body=body)
