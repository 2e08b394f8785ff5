"""Send, consume and RPC hooks, and the consume thread options RocketMQ users set."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from orbitmq.client import (
    ConsumeConcurrentlyContext,
    ConsumeResult,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
)
from orbitmq.client import sync as blocking
from orbitmq.client.hooks import CONSUME_CONTEXT_TYPE, ConsumeMessageContext, SendMessageContext
from orbitmq.errors import ConfigError
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.signing import AclClientRPCHook, AclCredentials, SigningRemotingClient
from tests.client.helpers import create_topic, wait_until
from tests.support.procs import eventually

pytestmark = pytest.mark.timeout(60)


class SendRecorder:
    def __init__(self, fail: bool = False) -> None:
        self.before: list[SendMessageContext] = []
        self.after: list[SendMessageContext] = []
        self.fail = fail

    def hook_name(self) -> str:
        return "recorder"

    def send_message_before(self, context: SendMessageContext) -> None:
        context.props["seen"] = "yes"
        self.before.append(context)
        if self.fail:
            raise RuntimeError("a broken hook")

    def send_message_after(self, context: SendMessageContext) -> None:
        self.after.append(context)


class ConsumeRecorder:
    def __init__(self) -> None:
        self.before: list[ConsumeMessageContext] = []
        self.after: list[ConsumeMessageContext] = []

    def hook_name(self) -> str:
        return "consume-recorder"

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        self.before.append(context)

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        self.after.append(context)


class RpcRecorder:
    def __init__(self) -> None:
        self.requests: list[tuple[str, int]] = []
        self.responses: list[tuple[int, int]] = []

    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None:
        self.requests.append((remote_addr, request.code))
        request.ext_fields = {**(request.ext_fields or {}), "appTag": "observed"}

    def do_after_response(self, remote_addr: str, request: RemotingCommand, response: RemotingCommand) -> None:
        self.responses.append((request.code, response.code))


async def test_send_hooks_see_each_send_before_and_after_with_its_result(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    """DefaultMQProducerImpl.sendKernelImpl calls SendMessageHook.sendMessageBefore and
    sendMessageAfter (with the SendResult) around each send request; a hook that throws is
    logged and the send goes on."""
    topic, pg, _ = names
    hook, broken = SendRecorder(), SendRecorder(fail=True)
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        producer.register_send_message_hook(broken)
        producer.register_send_message_hook(hook)
        await create_topic(producer, topic, queues=2)
        results = await asyncio.gather(*(producer.send(Message(topic, b"m%d" % i)) for i in range(3)))
        await producer.send_oneway(Message(topic, b"oneway"))
    assert len(hook.before) == len(hook.after) == 4
    synced = [c for c in hook.after if c.communication_mode == "SYNC"]
    assert sorted(c.message.body for c in synced) == [b"m0", b"m1", b"m2"]  # type: ignore[union-attr]
    assert {c.send_result.msg_id for c in synced} == {r.msg_id for r in results}
    assert all(c.producer_group == pg and c.broker_addr and c.mq.topic == topic for c in hook.after)
    assert all(c.msg_type == "Normal_Msg" and c.exception is None and c.props["seen"] == "yes" for c in hook.after)
    assert [c.communication_mode for c in hook.after if c.send_result is None] == ["ONEWAY"]
    with pytest.raises(Exception, match="send_message_before"):
        producer.register_send_message_hook(object())  # type: ignore[arg-type]


async def test_consume_hooks_see_each_listener_call_and_its_status(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    """ConsumeMessageConcurrentlyService.ConsumeRequest.run calls ConsumeMessageHook.consumeMessageBefore,
    the listener, then consumeMessageAfter with status, success and ConsumeContextType."""
    topic, pg, cg = names
    hook = ConsumeRecorder()
    failed_once: set[bytes] = set()

    def listener(msgs: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeResult:
        if msgs[0].body == b"flaky" and b"flaky" not in failed_once:
            failed_once.add(b"flaky")
            context.delay_level_when_next_consume = 1  # the shortest retry delay keeps the test short
            raise ValueError("first delivery fails")
        return ConsumeResult.CONSUME_SUCCESS

    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        await producer.send(Message(topic, b"fine"))
        await producer.send(Message(topic, b"flaky"))
        consumer = PushConsumer(cg, namesrv_addr=namesrv, instance_name=f"hooks-{cg}",
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener)
        consumer.register_consume_message_hook(hook)
        await consumer.start()
        try:
            await wait_until(lambda: sum(c.success for c in hook.after) >= 2, timeout=30)
        finally:
            await consumer.shutdown()
    assert len(hook.before) >= 3
    by_outcome = {(c.msg_list[0].body, c.status, c.success, c.props[CONSUME_CONTEXT_TYPE]) for c in hook.after}
    assert (b"fine", "CONSUME_SUCCESS", True, "SUCCESS") in by_outcome
    assert (b"flaky", "RECONSUME_LATER", False, "EXCEPTION") in by_outcome
    assert (b"flaky", "CONSUME_SUCCESS", True, "SUCCESS") in by_outcome
    assert all(c.consumer_group == cg and c.mq is not None for c in hook.after)


async def test_an_rpc_hook_sees_every_request_and_response_of_the_client(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    """RPCHook.doBeforeRequest / doAfterResponse run around every request of the client
    instance (NettyRemotingAbstract.doBeforeRpcHooks / doAfterRpcHooks)."""
    topic, pg, _ = names
    hook = RpcRecorder()
    async with Producer(pg, namesrv_addr=namesrv, rpc_hook=hook, instance_name=f"rpc-{uuid.uuid4().hex}") as producer:
        await create_topic(producer, topic, queues=1)
        await producer.send(Message(topic, b"x"))
    codes = {code for _, code in hook.requests}
    assert {RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.SEND_MESSAGE_V2} <= codes
    assert (RequestCode.SEND_MESSAGE_V2, 0) in hook.responses
    assert any(addr == namesrv for addr, _ in hook.requests)


def test_acl_signing_is_the_last_rpc_hook_so_it_signs_what_other_hooks_add() -> None:
    """AclClientRPCHook is itself an RPCHook; a hook added later still runs before it."""
    client = SigningRemotingClient(AclCredentials("ak", "secretkey"))
    user = RpcRecorder()
    client.add_rpc_hook(user)
    assert client.rpc_hooks[0] is user and isinstance(client.rpc_hooks[-1], AclClientRPCHook)
    cmd = RemotingCommand.request(RequestCode.HEART_BEAT, {"a": "1"}, b"{}")
    client._before("127.0.0.1:1", cmd)
    fields: dict[str, Any] = dict(cmd.ext_fields or {})
    assert fields["appTag"] == "observed" and fields["AccessKey"] == "ak" and "Signature" in fields


async def test_consume_thread_min_starts_that_many_workers_and_is_checked_as_rocketmq_does(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    """DefaultMQPushConsumer.consumeThreadMin / consumeThreadMax, checked as
    DefaultMQPushConsumerImpl.checkConfig does (each in [1, 1000], min <= max)."""
    topic, pg, cg = names
    with pytest.raises(ConfigError, match=r"consumeThreadMin \(8\) is larger than consumeThreadMax \(4\)"):
        PushConsumer(cg, consume_thread_min=8, consume_thread_max=4)
    with pytest.raises(ConfigError, match=r"consumeThreadMin Out of range \[1, 1000\]"):
        PushConsumer(cg, consume_thread_min=0)
    assert PushConsumer(cg, consume_thread_max=4).config.consume_thread_min == 4
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
    consumer = PushConsumer(cg, namesrv_addr=namesrv, instance_name=f"threads-{cg}",
                            consume_thread_min=3, consume_thread_max=6)
    consumer.subscribe(topic, "*")
    consumer.register_listener(lambda msgs: ConsumeResult.CONSUME_SUCCESS)
    await consumer.start()
    try:
        runner = consumer._runner
        assert runner is not None and runner.executor is not None
        assert len(runner.executor._threads) == 3
        info = await consumer.running_info()
        assert info["properties"]["PROP_THREADPOOL_CORE_SIZE"] == "3"
    finally:
        await consumer.shutdown()


def test_the_blocking_twins_take_send_and_consume_hooks(namesrv: str, names: tuple[str, str, str]) -> None:
    """The blocking Producer and PushConsumer register the same hooks (they run on the client loop)."""
    topic, pg, cg = names
    sent, consumed = SendRecorder(), ConsumeRecorder()
    producer = blocking.Producer(pg, namesrv_addr=namesrv)
    producer.register_send_message_hook(sent)
    producer.start()
    try:
        producer.create_topic("TBW102", topic, 1)
        producer.send(Message(topic, b"blocking"))
        consumer = blocking.PushConsumer(cg, namesrv_addr=namesrv, instance_name=f"blocking-{cg}",
                                         consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        consumer.register_listener(lambda msgs: ConsumeResult.CONSUME_SUCCESS)
        consumer.register_consume_message_hook(consumed)
        consumer.start()
        try:
            eventually(lambda: bool(consumed.after), timeout=20)
        finally:
            consumer.shutdown()
    finally:
        producer.shutdown()
    assert [c.message.body for c in sent.after] == [b"blocking"]  # type: ignore[union-attr]
    assert consumed.after[0].msg_list[0].body == b"blocking" and consumed.after[0].success
