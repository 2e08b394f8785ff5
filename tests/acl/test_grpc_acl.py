"""ACL accounts apply to RocketMQ 5 gRPC clients too: the front checks their signature against
plain_acl.yml and acts with their account, so the broker's permission rules hold for them."""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from collections.abc import AsyncIterator

import grpc
import pytest

from orbitmq.client import Producer
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.pb import service_pb2_grpc as sgrpc
from orbitmq.remoting.codes import RequestCode, ResponseCode
from tests.acl.conftest import ADMIN, CONSUMER, PUBLISHER, AclCluster, call
from tests.client.helpers import create_topic
from tests.support.procs import eventually

pytestmark = pytest.mark.timeout(60)


def signed(access_key: str, secret_key: str) -> list[tuple[str, str]]:
    date = time.strftime("%Y%m%dT%H%M%SZ", time.localtime())  # the Python client's local time
    sig = hmac.new(secret_key.encode(), date.encode(), hashlib.sha1).hexdigest()
    return [("x-mq-client-id", "acl@1@0@z"), ("x-mq-date-time", date), ("x-mq-language", "PYTHON"),
            ("authorization", f"MQv2-HMAC-SHA1 Credential={access_key}, SignedHeaders=x-mq-date-time, Signature={sig}")]


@pytest.fixture
async def stub(acl_cluster: AclCluster) -> AsyncIterator[sgrpc.MessagingServiceStub]:
    eventually(lambda: any(x.startswith("proxy listening on ") for x in acl_cluster.output), timeout=30)
    addr = next(x for x in acl_cluster.output if x.startswith("proxy listening on ")).split()[-1]
    async with grpc.aio.insecure_channel(addr) as channel:
        yield sgrpc.MessagingServiceStub(channel)


def send_request(topic: str) -> spb.SendMessageRequest:
    m = pb.Message(body=b"signed")
    m.topic.name = topic
    m.system_properties.message_id = uuid.uuid4().hex.upper()
    m.system_properties.message_type = pb.NORMAL
    return spb.SendMessageRequest(messages=[m])


async def test_grpc_requests_are_checked_against_the_acl_accounts(
    acl_cluster: AclCluster, stub: sgrpc.MessagingServiceStub
) -> None:
    async with Producer("AclGrpcAdmin", namesrv_addr=acl_cluster.namesrv, access_key=ADMIN.access_key,
                        secret_key=ADMIN.secret_key) as admin:
        for topic in ("AclPub", "AclDeny"):
            await create_topic(admin, topic, 2)
    route = spb.QueryRouteRequest()
    route.topic.name = "AclPub"
    nobody = [("x-mq-client-id", "acl@1@0@z"), ("authorization", "MQv2-HMAC-SHA1 Credential=, SignedHeaders=x, Signature=")]
    assert (await stub.QueryRoute(route, metadata=nobody, timeout=10)).status.code == pb.UNAUTHORIZED
    wrong = signed(PUBLISHER.access_key, "not the secret")
    assert (await stub.QueryRoute(route, metadata=wrong, timeout=10)).status.code == pb.UNAUTHORIZED
    stranger = signed("noSuchKey01", "whatever")
    assert (await stub.QueryRoute(route, metadata=stranger, timeout=10)).status.code == pb.UNAUTHORIZED
    good = signed(PUBLISHER.access_key, PUBLISHER.secret_key)
    sent = await stub.SendMessage(send_request("AclPub"), metadata=good, timeout=10)
    assert sent.status.code == pb.OK, sent.status
    denied = await stub.SendMessage(send_request("AclDeny"), metadata=good, timeout=10)
    assert denied.status.code == pb.FORBIDDEN, denied.status


async def test_a_topic_type_is_read_with_the_callers_account(
    acl_cluster: AclCluster, stub: sgrpc.MessagingServiceStub
) -> None:
    fields = {"topic": "AclPubFifo", "defaultTopic": "TBW102", "readQueueNums": "2", "writeQueueNums": "2",
              "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
              "attributes": "+message.type=FIFO"}
    made = await call(acl_cluster.broker, RequestCode.UPDATE_AND_CREATE_TOPIC, fields, creds=ADMIN)
    assert made.code == ResponseCode.SUCCESS, made.remark
    route = spb.QueryRouteRequest()
    route.topic.name = "AclPubFifo"
    good = signed(CONSUMER.access_key, CONSUMER.secret_key)

    async def accepted() -> list[int]:
        answer = await stub.QueryRoute(route, metadata=good, timeout=10)
        assert answer.status.code == pb.OK, answer.status
        return list(answer.message_queues[0].accept_message_types)

    deadline = time.monotonic() + 15  # the front reads broker tables anew after a few seconds
    while await accepted() != [pb.FIFO] and time.monotonic() < deadline:
        pass
    assert await accepted() == [pb.FIFO]
