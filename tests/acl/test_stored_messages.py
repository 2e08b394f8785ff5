"""Issue 10 items 3-5: requests that name a stored message, or rewrite a group's offsets,
are checked against the message's topic and the groups and topics they touch."""

from __future__ import annotations

import pytest

from orbitmq.client import Message, Producer, SendStatus
from orbitmq.client.acl import sign_request
from orbitmq.common.hashing import java_string_hash
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.common.record import decode_record
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.acl.conftest import ADMIN, CONSUMER, PUBLISHER, AclCluster, call

pytestmark = pytest.mark.timeout(60)

MASK = (1 << 32) - 1


def colliding_key(topic: str, target: str) -> str:
    """A key whose index hash under `topic` equals the hash of `target` (the whole `topic#key`
    text of another topic's message): Java's String.hashCode is a polynomial, so 7 characters
    in base 31 reach any value."""
    prefix = topic + "#"
    want = java_string_hash(target) & MASK
    rem = (want - (java_string_hash(prefix) & MASK) * pow(31, 7, 1 << 32) - 65 * sum(31**j for j in range(7))) & MASK
    digits = []
    for j in range(6, -1, -1):
        digits.append(rem // 31**j)
        rem %= 31**j
    key = "".join(chr(65 + d) for d in digits)
    assert java_string_hash(prefix + key) == java_string_hash(target)
    return key


async def send_as_admin(cluster: AclCluster, topic: str, key: str = "") -> int:
    """Send one message with the admin account; returns its CommitLog offset."""
    async with Producer("AclAdminProducers", namesrv_addr=cluster.namesrv,
                        access_key=ADMIN.access_key, secret_key=ADMIN.secret_key) as producer:
        msg = Message(topic, b"secret body")
        if key:
            msg.keys = key
        result = await producer.send(msg)
    assert result.status is SendStatus.SEND_OK
    return parse_offset_msg_id(result.offset_msg_id).commit_log_offset


async def test_view_message_by_id_refuses_a_message_of_a_denied_topic_on_both_ports(acl_cluster: AclCluster) -> None:
    denied = await send_as_admin(acl_cluster, "AclDeny")
    readable = await send_as_admin(acl_cluster, "AclPub")
    for addr in (acl_cluster.broker, acl_cluster.fast_addr):
        refused = await call(addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(denied)}, creds=CONSUMER)
        assert refused.code == ResponseCode.NO_PERMISSION, (addr, refused.code, refused.remark)
        assert "topic AclDeny" in (refused.remark or "") and refused.body is None
        shown = await call(addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(readable)}, creds=CONSUMER)
        assert shown.code == ResponseCode.SUCCESS and decode_record(shown.body_bytes()).topic == "AclPub"
        admin = await call(addr, RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(denied)}, creds=ADMIN)
        assert admin.code == ResponseCode.SUCCESS and decode_record(admin.body_bytes()).body == b"secret body"


async def test_query_message_leaves_out_records_of_topics_the_account_may_not_read(acl_cluster: AclCluster) -> None:
    await send_as_admin(acl_cluster, "AclDeny", key="payroll-2026")
    key = colliding_key("AclPub", "AclDeny#payroll-2026")
    fields = {"topic": "AclPub", "key": key, "maxNum": "32", "beginTimestamp": "0", "endTimestamp": str(1 << 62)}
    # The index matches by hash only: an account that may read everything gets the other topic's record.
    admin = await call(acl_cluster.broker, RequestCode.QUERY_MESSAGE, fields, creds=ADMIN)
    assert admin.code == ResponseCode.SUCCESS
    assert decode_record(admin.body_bytes()).topic == "AclDeny"
    for addr in (acl_cluster.broker, acl_cluster.fast_addr):
        refused = await call(addr, RequestCode.QUERY_MESSAGE, fields, creds=CONSUMER)
        assert refused.code == ResponseCode.QUERY_NOT_FOUND, (addr, refused.code, refused.remark)
        assert not refused.body


def send_back_fields(offset: int, group: str = "AclGroup") -> dict[str, str]:
    return {"offset": str(offset), "group": group, "delayLevel": "0", "originMsgId": "", "originTopic": ""}


def heartbeat(group: str, topic: str) -> bytes:
    return (
        b'{"clientID":"acl-sendback","producerDataSet":[],"consumerDataSet":[{"groupName":"' + group.encode()
        + b'","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":'
        b'"CONSUME_FROM_LAST_OFFSET","unitMode":false,"subscriptionDataSet":[{"topic":"' + topic.encode()
        + b'","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG","classFilterMode":false}]}]}'
    )


async def test_send_back_needs_a_message_the_group_subscribes_to_and_the_account_may_read(
    acl_cluster: AclCluster,
) -> None:
    denied = await send_as_admin(acl_cluster, "AclDeny")
    readable = await send_as_admin(acl_cluster, "AclPub")
    async with RemotingClient() as client:
        async def invoke(code: int, fields: dict[str, str], body: bytes | None = None) -> RemotingCommand:
            cmd = sign_request(RemotingCommand.request(code, fields, body), CONSUMER)
            return await client.invoke(acl_cluster.broker, cmd, 5.0)

        beat = await invoke(RequestCode.HEART_BEAT, {}, heartbeat("AclGroup", "AclPub"))
        assert beat.code == ResponseCode.SUCCESS, beat.remark
        refused = await invoke(RequestCode.CONSUMER_SEND_MSG_BACK, send_back_fields(denied))
        assert refused.code == ResponseCode.NO_PERMISSION, refused.remark
        assert "AclDeny" in (refused.remark or "")
        allowed = await invoke(RequestCode.CONSUMER_SEND_MSG_BACK, send_back_fields(readable))
        assert allowed.code == ResponseCode.SUCCESS, allowed.remark
    # Without a consumer of the group subscribed to the message's topic, even a readable one is refused.
    lone = await call(acl_cluster.broker, RequestCode.CONSUMER_SEND_MSG_BACK, send_back_fields(readable), creds=CONSUMER)
    assert lone.code == ResponseCode.NO_PERMISSION and "does not subscribe" in (lone.remark or "")


@pytest.mark.parametrize(("code", "fields"), [
    (RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "AclGroup", "destGroup": "OtherGroup", "topic": "AclPub",
                                      "offline": "true"}),
    (RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "AclGroup", "destGroup": "AclGroup", "offline": "true"}),
    (RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {"group": "OtherGroup", "topic": "AclPub", "timestamp": "0",
                                                 "isForce": "true"}),
    (RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {"group": "AclGroup", "topic": "AclDeny", "timestamp": "0",
                                                 "isForce": "true"}),
])
async def test_offset_rewrites_need_sub_on_every_group_and_topic_or_an_admin(
    acl_cluster: AclCluster, code: int, fields: dict[str, str]
) -> None:
    for creds in (CONSUMER, PUBLISHER):
        refused = await call(acl_cluster.broker, code, fields, creds=creds)
        assert refused.code == ResponseCode.NO_PERMISSION, (creds.access_key, refused.code, refused.remark)
    admin = await call(acl_cluster.broker, code, fields, creds=ADMIN)
    assert admin.code != ResponseCode.NO_PERMISSION, admin.remark


async def test_offset_rewrites_of_the_accounts_own_group_and_topic_pass(acl_cluster: AclCluster) -> None:
    fields = {"srcGroup": "AclGroup", "destGroup": "AclGroup", "topic": "AclPub", "offline": "true"}
    response = await call(acl_cluster.broker, RequestCode.CLONE_GROUP_OFFSET, fields, creds=CONSUMER)
    assert response.code == ResponseCode.SUCCESS, response.remark
