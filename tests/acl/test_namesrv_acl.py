"""A NameServer with aclEnable=true: writes need a signed request of an admin account, reads stay
open, and a broker signs its registrations with its own account (brokerAccessKey/brokerSecretKey)."""

from __future__ import annotations

import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.client.acl import AclCredentials, sign_request
from orbitmq.errors import ConfigError
from orbitmq.namesrv import NameServer, NamesrvConfig
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(60)

NS_ACL = textwrap.dedent("""\
    accounts:
      - accessKey: brokerKey01
        secretKey: brokerSecret01
        admin: true
      - accessKey: userKey0001
        secretKey: userSecret01
        defaultTopicPerm: PUB|SUB
    """)
BROKER = AclCredentials("brokerKey01", "brokerSecret01")
USER = AclCredentials("userKey0001", "userSecret01")
REGISTER_FIELDS = {"brokerName": "rogue", "brokerAddr": "10.6.6.6:10911", "clusterName": "DefaultCluster",
                   "haServerAddr": "10.6.6.6:10912", "brokerId": "0"}
REGISTER_BODY = (b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1},'
                 b'"topicConfigTable":{"Orders":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":'
                 b'"SINGLE_TAG","topicName":"Orders","topicSysFlag":0,"writeQueueNums":4}}}}')


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[str]:
    (tmp_path / "plain_acl.yml").write_text(NS_ACL)
    config = NamesrvConfig.from_properties({
        "listenHost": "127.0.0.1", "listenPort": "0", "kvConfigPath": str(tmp_path / "kvConfig.json"),
        "aclEnable": "true",
    })
    assert config.acl_file == str(tmp_path / "plain_acl.yml")
    async with NameServer(config) as ns:
        host, port = ns.address
        yield f"{host}:{port}"


async def invoke(addr: str, code: int, fields: dict[str, str], body: bytes | None = None,
                 creds: AclCredentials | None = None) -> RemotingCommand:
    cmd = RemotingCommand.request(code, dict(fields), body)
    if creds is not None:
        sign_request(cmd, creds)
    async with RemotingClient() as client:
        return await client.invoke(addr, cmd, 5.0)


async def test_a_stray_registration_is_refused_and_changes_no_route(namesrv: str) -> None:
    for creds in (None, USER, AclCredentials(BROKER.access_key, "guessed-secret")):
        refused = await invoke(namesrv, RequestCode.REGISTER_BROKER, REGISTER_FIELDS, REGISTER_BODY, creds)
        assert refused.code in (ResponseCode.SYSTEM_ERROR, ResponseCode.NO_PERMISSION), refused.remark
        route = await invoke(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"})
        assert route.code == ResponseCode.TOPIC_NOT_EXIST
    async with RemotingClient() as client:  # a broker's registration lives as long as its connection
        cmd = RemotingCommand.request(RequestCode.REGISTER_BROKER, dict(REGISTER_FIELDS), REGISTER_BODY)
        sign_request(cmd, AclCredentials(BROKER.access_key, BROKER.secret_key, signature_version=2))
        signed = await client.invoke(namesrv, cmd, 5.0)
        assert signed.code == ResponseCode.SUCCESS, signed.remark
        route = await invoke(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Orders"})
        assert route.code == ResponseCode.SUCCESS  # reads need no signature
        # The same signed registration sent again (a replay) is refused.
        replayed = await client.invoke(namesrv, cmd, 5.0)
        assert replayed.code == ResponseCode.NO_PERMISSION and "replay" in (replayed.remark or "")
    gone = await invoke(namesrv, RequestCode.UNREGISTER_BROKER, REGISTER_FIELDS, creds=USER)
    assert gone.code == ResponseCode.NO_PERMISSION and "Need admin permission" in (gone.remark or "")


@pytest.mark.parametrize(("code", "fields", "body"), [
    (RequestCode.PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders", "value": "x:1"}, None),
    (RequestCode.DELETE_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders"}, None),
    (RequestCode.UPDATE_NAMESRV_CONFIG, {}, b"orderMessageEnable=true\n"),
])
async def test_kv_and_config_changes_need_an_admin_account(
    namesrv: str, code: int, fields: dict[str, str], body: bytes | None
) -> None:
    for creds in (None, USER):
        refused = await invoke(namesrv, code, fields, body, creds)
        assert refused.code in (ResponseCode.SYSTEM_ERROR, ResponseCode.NO_PERMISSION), refused.remark
    done = await invoke(namesrv, code, fields, body, BROKER)
    assert done.code in (ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND), done.remark


async def test_the_kv_table_is_unchanged_by_an_unsigned_put(namesrv: str) -> None:
    put = {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders", "value": "broker-a:4"}
    await invoke(namesrv, RequestCode.PUT_KV_CONFIG, put)
    read = await invoke(namesrv, RequestCode.GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "Orders"})
    assert read.code == ResponseCode.QUERY_NOT_FOUND


async def test_a_broker_with_its_own_admin_account_registers(namesrv: str, tmp_path: Path) -> None:
    def broker_config(name: str, **extra: str) -> BrokerConfig:
        return BrokerConfig.from_properties({
            "storePathRootDir": str(tmp_path / name), "listenPort": "0", "bindAddress": "127.0.0.1",
            "brokerIP1": "127.0.0.1", "namesrvAddr": namesrv, "brokerName": name, "fastChannelEnable": "false",
            "haListenPort": "0", **extra,
        })

    async def has_route(name: str) -> bool:
        info = await invoke(namesrv, RequestCode.GET_BROKER_CLUSTER_INFO, {})
        return info.code == ResponseCode.SUCCESS and name.encode() in info.body_bytes()

    async with Broker(broker_config("signed", brokerAccessKey=BROKER.access_key,
                                    brokerSecretKey=BROKER.secret_key)):
        await until(lambda: has_route("signed"))
    async with Broker(broker_config("unsigned")):
        assert not await has_route("unsigned")


async def test_a_namesrv_with_acl_on_and_no_file_does_not_start(tmp_path: Path) -> None:
    config = NamesrvConfig.from_properties({"listenHost": "127.0.0.1", "listenPort": "0", "aclEnable": "true",
                                            "kvConfigPath": str(tmp_path / "kvConfig.json")})
    with pytest.raises(ConfigError, match="plain_acl.yml"):
        await NameServer(config).start()
