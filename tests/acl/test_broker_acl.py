"""With aclEnable=true the broker checks every request (real `orbitmq dev` process)."""

from __future__ import annotations

import pytest

from orbitmq.client import Message, Producer, SendStatus
from orbitmq.client.acl import AclCredentials, sign_request
from orbitmq.errors import BrokerError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.acl.conftest import ADMIN, CONSUMER, PUBLISHER, AclCluster, call

pytestmark = pytest.mark.timeout(60)


def pull_fields(topic: str, group: str) -> dict[str, str]:
    return {
        "consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0", "maxMsgNums": "1",
        "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0",
    }


def refused(response: RemotingCommand, text: str) -> bool:
    return response.code == ResponseCode.SYSTEM_ERROR and text in (response.remark or "")


async def test_a_publisher_with_pub_permission_sends(acl_cluster: AclCluster) -> None:
    async with Producer("AclProducerGroup", namesrv_addr=acl_cluster.namesrv,
                        access_key=PUBLISHER.access_key, secret_key=PUBLISHER.secret_key) as producer:
        result = await producer.send(Message("AclPub", b"hello"))
    assert result.status is SendStatus.SEND_OK


async def test_a_wrong_secret_is_refused_with_system_error_and_a_remark(acl_cluster: AclCluster) -> None:
    wrong = AclCredentials(PUBLISHER.access_key, "notTheSecret")
    response = await call(acl_cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=wrong)
    assert refused(response, f"Check signature failed for accessKey={PUBLISHER.access_key}")


async def test_a_request_without_keys_or_with_an_unknown_key_is_refused(acl_cluster: AclCluster) -> None:
    response = await call(acl_cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert refused(response, "No accessKey is configured")
    stranger = AclCredentials("nobody0001", "whatever01")
    response = await call(acl_cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=stranger)
    assert refused(response, "No acl config for nobody0001")


async def test_a_body_changed_after_signing_is_refused(acl_cluster: AclCluster) -> None:
    cmd = sign_request(RemotingCommand.request(RequestCode.HEART_BEAT, {}, b'{"clientID":"a"}'), PUBLISHER)
    cmd.body = b'{"clientID":"b"}'
    async with RemotingClient() as client:
        response = await client.invoke(acl_cluster.broker, cmd, timeout=5.0)
    assert refused(response, "Check signature failed")


async def test_deny_on_a_topic_wins_over_an_allowing_default(acl_cluster: AclCluster) -> None:
    async with Producer("AclProducerGroup", namesrv_addr=acl_cluster.namesrv,
                        access_key=CONSUMER.access_key, secret_key=CONSUMER.secret_key,
                        retry_times_when_send_failed=0) as producer:
        with pytest.raises(BrokerError, match="No permission for topic AclDeny"):
            await producer.send(Message("AclDeny", b"no"))


async def test_pulling_needs_sub_on_the_topic_and_on_the_group(acl_cluster: AclCluster) -> None:
    broker = acl_cluster.broker
    # The publisher has PUB only on AclPub: no SUB.
    response = await call(broker, RequestCode.PULL_MESSAGE, pull_fields("AclPub", "AclGroup"), creds=PUBLISHER)
    assert refused(response, "No permission for topic AclPub")
    # The consumer may read every topic but only group AclGroup.
    response = await call(broker, RequestCode.PULL_MESSAGE, pull_fields("AclPub", "OtherGroup"), creds=CONSUMER)
    assert refused(response, "No default permission for group OtherGroup")
    response = await call(broker, RequestCode.PULL_MESSAGE, pull_fields("AclPub", "AclGroup"), creds=CONSUMER)
    assert response.code != ResponseCode.SYSTEM_ERROR, response.remark


async def test_a_heartbeat_names_groups_and_topics_that_are_checked(acl_cluster: AclCluster) -> None:
    body = (b'{"clientID":"c1","producerDataSet":[],"consumerDataSet":[{"groupName":"OtherGroup",'
            b'"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":'
            b'"CONSUME_FROM_LAST_OFFSET","unitMode":false,"subscriptionDataSet":[]}]}')
    response = await call(acl_cluster.broker, RequestCode.HEART_BEAT, body=body, creds=CONSUMER)
    assert refused(response, "group OtherGroup")
    garbage = await call(acl_cluster.broker, RequestCode.HEART_BEAT, body=b"{not json", creds=CONSUMER)
    assert refused(garbage, "heartbeat body")
    # The broker keeps serving after both.
    ok = await call(acl_cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=CONSUMER)
    assert ok.code == ResponseCode.SUCCESS


@pytest.mark.parametrize(("code", "fields"), [
    (RequestCode.UPDATE_AND_CREATE_TOPIC, {"topic": "AclAdminTopic", "defaultTopic": "TBW102", "readQueueNums": "2",
                                           "writeQueueNums": "2", "perm": "6", "topicFilterType": "SINGLE_TAG",
                                           "topicSysFlag": "0", "order": "false"}),
    (RequestCode.UPDATE_BROKER_CONFIG, {}),
    (RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "AclAdminTopic"}),
    (RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, {"accessKey": "sneaky0001", "secretKey": "sneaky0001", "admin": "true"}),
])
async def test_admin_only_requests_need_an_admin_account(
    acl_cluster: AclCluster, code: int, fields: dict[str, str]
) -> None:
    body = b"brokerPermission=6\n" if code == RequestCode.UPDATE_BROKER_CONFIG else None
    response = await call(acl_cluster.broker, code, fields, body=body, creds=CONSUMER)
    assert refused(response, f"Need admin permission for request code={code}")
    if code != RequestCode.UPDATE_AND_CREATE_ACL_CONFIG:
        response = await call(acl_cluster.broker, code, fields, body=body, creds=ADMIN)
        assert response.code == ResponseCode.SUCCESS, response.remark


async def test_a_signature_made_with_or_without_unique_key_query_is_accepted(acl_cluster: AclCluster) -> None:
    fields = {"topic": "AclPub", "key": "k", "maxNum": "1", "beginTimestamp": "0", "endTimestamp": "1"}
    for signed_before_flag in (True, False):
        cmd = RemotingCommand.request(RequestCode.QUERY_MESSAGE, dict(fields))
        if signed_before_flag:  # the Java client's order: sign, then add the flag
            sign_request(cmd, CONSUMER)
            assert cmd.ext_fields is not None
            cmd.ext_fields["_UNIQUE_KEY_QUERY"] = "false"
        else:
            cmd.ext_fields = {**fields, "_UNIQUE_KEY_QUERY": "false"}
            sign_request(cmd, CONSUMER)
        async with RemotingClient() as client:
            response = await client.invoke(acl_cluster.broker, cmd, timeout=5.0)
        assert not refused(response, "signature"), response.remark


async def test_the_vip_channel_serves_every_code_but_pull_and_checks_acl_too(acl_cluster: AclCluster) -> None:
    fast = acl_cluster.fast_addr
    assert (await call(fast, RequestCode.GET_BROKER_RUNTIME_INFO, creds=ADMIN)).code == ResponseCode.SUCCESS
    assert refused(await call(fast, RequestCode.GET_BROKER_RUNTIME_INFO), "No accessKey is configured")
    pull = await call(fast, RequestCode.PULL_MESSAGE, pull_fields("AclPub", "AclGroup"), creds=CONSUMER)
    assert pull.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_a_producer_may_unregister_without_any_group_right(acl_cluster: AclCluster) -> None:
    fields = {"clientID": "127.0.0.1@acl", "producerGroup": "AclProducerGroup"}
    response = await call(acl_cluster.broker, RequestCode.UNREGISTER_CLIENT, fields, creds=PUBLISHER)
    assert response.code == ResponseCode.SUCCESS, response.remark
    fields = {"clientID": "127.0.0.1@acl", "consumerGroup": "OtherGroup"}
    response = await call(acl_cluster.broker, RequestCode.UNREGISTER_CLIENT, fields, creds=PUBLISHER)
    assert refused(response, "group OtherGroup")
