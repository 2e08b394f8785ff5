"""The quickstart (produce, then consume with a push consumer) works with ACL on when the client has keys."""

from __future__ import annotations

import asyncio
import sys

import pytest

from orbitmq.client import ConsumeFromWhere, ConsumeResult, Message, Producer, PushConsumer, SendStatus
from orbitmq.client.config import SecurityOptions
from orbitmq.common.message import MessageExt
from tests.acl.conftest import ADMIN, CONSUMER, AclCluster

pytestmark = pytest.mark.timeout(60)


async def test_a_signed_producer_and_push_consumer_exchange_messages(acl_cluster: AclCluster) -> None:
    keys: SecurityOptions = {"access_key": CONSUMER.access_key, "secret_key": CONSUMER.secret_key}
    topic = "AclQuickstart"
    async with Producer("AclQuickstartProducer", namesrv_addr=acl_cluster.namesrv, **keys) as producer:
        results = [await producer.send(Message(topic, f"hello {i}".encode())) for i in range(10)]
    assert all(r.status is SendStatus.SEND_OK for r in results)

    got: set[bytes] = set()
    all_in = asyncio.Event()

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        got.update(m.body for m in msgs)
        if len(got) == 10:
            all_in.set()
        return ConsumeResult.CONSUME_SUCCESS

    consumer = PushConsumer("AclGroup", namesrv_addr=acl_cluster.namesrv,
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, **keys)
    consumer.subscribe(topic, "*")
    consumer.register_listener(listener)
    await consumer.start()
    try:
        await asyncio.wait_for(all_in.wait(), 30)
    finally:
        await consumer.shutdown()
    assert got == {f"hello {i}".encode() for i in range(10)}



async def test_message_traces_are_sent_with_the_owners_keys(acl_cluster: AclCluster) -> None:
    async with Producer("AclTraceProducer", namesrv_addr=acl_cluster.namesrv, instance_name="acl-trace",
                        enable_msg_trace=True, access_key=CONSUMER.access_key,
                        secret_key=CONSUMER.secret_key) as producer:
        result = await producer.send(Message("AclTraced", b"traced"))
    admin = ["--accessKey", ADMIN.access_key, "--secretKey", ADMIN.secret_key]
    out = ""
    for _ in range(40):  # the trace batch leaves after a short linger; allow for its route lookup
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "orbitmq", "admin", *admin, "queryMsgTraceById", "-i", result.msg_id,
            "-n", acl_cluster.namesrv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        stdout, _ = await asyncio.wait_for(proc.communicate(), 30)
        out = stdout.decode()
        if proc.returncode == 0 and any(line.startswith("Pub") for line in out.splitlines()):
            break
        await asyncio.sleep(0.25)
    assert any(line.startswith("Pub") and "AclTraceProducer" in line for line in out.splitlines()), out
