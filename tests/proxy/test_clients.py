"""The proxy's client registry: gRPC clients are forgotten after silence, never while a stream is open;
a consumer's Settings and running info follow its group's consumeMessageOrderly."""

from __future__ import annotations

import asyncio
import time

import orjson
import pytest

from orbitmq.common.route import BrokerData, QueueData, TopicRouteData
from orbitmq.proxy.backend import Backend, BrokerMeta
from orbitmq.proxy.clients import CLIENT_EXPIRY_SECONDS, Metadata
from orbitmq.proxy.codec import GrpcStatusError
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.service import MessagingService
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand


async def test_silent_clients_expire_and_streaming_ones_do_not() -> None:
    service = MessagingService(Backend(["127.0.0.1:1"]), ("127.0.0.1", 8081))
    quiet = service.clients.get_or_create(Metadata("quiet@1"))
    streaming = service.clients.get_or_create(Metadata("streaming@1"))
    streaming.streams.append(asyncio.Queue())
    later = time.monotonic() + CLIENT_EXPIRY_SECONDS + 1
    assert await service.clients.expire(later) == ["quiet@1"]
    assert service.clients.get("streaming@1") is streaming and service.clients.get("quiet@1") is None
    assert quiet.remoting is None
    await service.clients.terminate("streaming@1")
    assert streaming.streams[0].get_nowait() is None  # its Telemetry stream is ended


def test_a_call_without_a_client_id_where_one_is_needed() -> None:
    service = MessagingService(Backend(["127.0.0.1:1"]), ("127.0.0.1", 8081))
    with pytest.raises(GrpcStatusError) as err:
        service.clients.get_or_create(Metadata(""))
    assert err.value.code == pb.CLIENT_ID_REQUIRED


async def test_a_consumer_of_an_orderly_group_is_told_fifo_and_reports_it() -> None:
    """Settings `fifo` is the group's consumeMessageOrderly on the brokers of the subscribed topics, whatever
    the topic's message.type; consumerStatus then shows the client as orderly."""
    class Tables(Backend):
        async def route(self, topic: str) -> TopicRouteData:
            return TopicRouteData((QueueData("b", 1, 1, 6),), (BrokerData("C", "b", {0: "127.0.0.1:1"}),))

        async def meta(self, addr: str) -> BrokerMeta:
            fifo_topic = {"message.type": "FIFO"}
            return BrokerMeta({"FifoTopic": fifo_topic}, frozenset({"OrderlyGroup"}), frozenset())

    service = MessagingService(Tables(["127.0.0.1:1"]), ("127.0.0.1", 8081))
    for group, topic, fifo in (("OrderlyGroup", "PlainTopic", True), ("PlainGroup", "FifoTopic", False)):
        client = service.clients.get_or_create(Metadata(f"{group}@1"))
        settings = pb.Settings(client_type=pb.PUSH_CONSUMER)
        settings.subscription.group.name = group
        settings.subscription.subscriptions.add().topic.name = topic
        assert (await service.settings_reply(client, settings)).subscription.fifo is fifo
        ask = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": group})
        info = orjson.loads((await client._on_running_info(ask, None)).body_bytes())  # type: ignore[arg-type]
        assert info["properties"]["PROP_CONSUMEORDERLY"] == str(fifo).lower()


async def test_a_consumers_backoff_is_its_groups_retry_policy() -> None:
    """As RocketMQ 5's proxy: max_attempts = retryMaxTimes + 1 and the group's groupRetryPolicy as the backoff
    (customized delays or exponential); a group no broker has yet gets the defaults (17 attempts, 1 s … 2 h)."""
    from orbitmq.common.retry_policy import CustomizedRetryPolicy, ExponentialRetryPolicy, GroupRetryPolicy
    from orbitmq.common.subscription_group import SubscriptionGroupConfig

    configs = {
        "Custom": SubscriptionGroupConfig("Custom", retry_max_times=1, group_retry_policy=GroupRetryPolicy(
            "CUSTOMIZED", customized=CustomizedRetryPolicy((1500, 3000)))),
        "Exp": SubscriptionGroupConfig("Exp", retry_max_times=5, group_retry_policy=GroupRetryPolicy(
            "EXPONENTIAL", exponential=ExponentialRetryPolicy(1000, 60_000, 3))),
    }

    class Tables(Backend):
        async def route(self, topic: str) -> TopicRouteData:
            return TopicRouteData((QueueData("b", 1, 1, 6),), (BrokerData("C", "b", {0: "127.0.0.1:1"}),))

        async def meta(self, addr: str) -> BrokerMeta:
            return BrokerMeta({}, frozenset(), frozenset(configs), configs)

    service = MessagingService(Tables(["127.0.0.1:1"]), ("127.0.0.1", 8081))

    async def backoff(group: str) -> pb.RetryPolicy:
        settings = pb.Settings(client_type=pb.PUSH_CONSUMER)
        settings.subscription.group.name = group
        settings.subscription.subscriptions.add().topic.name = "T"
        reply = await service.settings_reply(service.clients.get_or_create(Metadata(f"{group}@1")), settings)
        return reply.backoff_policy

    custom = await backoff("Custom")
    assert custom.max_attempts == 2 and custom.WhichOneof("strategy") == "customized_backoff"
    assert [d.ToMilliseconds() for d in custom.customized_backoff.next] == [1500, 3000]
    exp = await backoff("Exp")
    assert exp.max_attempts == 6 and exp.WhichOneof("strategy") == "exponential_backoff"
    eb = exp.exponential_backoff
    assert (eb.initial.ToMilliseconds(), eb.max.ToMilliseconds(), eb.multiplier) == (1000, 60_000, 3.0)
    default = await backoff("Unknown")
    assert default.max_attempts == 17
    assert [d.ToSeconds() for d in default.customized_backoff.next] == [
        1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200]


async def test_a_group_with_the_largest_retry_max_times_still_gets_its_settings() -> None:
    """retryMaxTimes may be the largest int32 (updateSubGroup accepts it); max_attempts, an int32 in the
    Settings, stays the largest int32 rather than failing the consumer's Telemetry settings."""
    from orbitmq.common.subscription_group import SubscriptionGroupConfig

    configs = {"Many": SubscriptionGroupConfig.from_json({"groupName": "Many", "retryMaxTimes": 2**31 - 1})}

    class Tables(Backend):
        async def route(self, topic: str) -> TopicRouteData:
            return TopicRouteData((QueueData("b", 1, 1, 6),), (BrokerData("C", "b", {0: "127.0.0.1:1"}),))

        async def meta(self, addr: str) -> BrokerMeta:
            return BrokerMeta({}, frozenset(), frozenset(), configs)

    service = MessagingService(Tables(["127.0.0.1:1"]), ("127.0.0.1", 8081))
    settings = pb.Settings(client_type=pb.PUSH_CONSUMER)
    settings.subscription.group.name = "Many"
    settings.subscription.subscriptions.add().topic.name = "T"
    client = service.clients.get_or_create(Metadata("Many@1"))
    answer = await service.on_telemetry(client, spb.TelemetryCommand(settings=settings))
    assert answer is not None and answer.status.code == pb.OK
    assert answer.settings.backoff_policy.max_attempts == 2**31 - 1


async def test_a_message_acked_during_a_renewal_pass_is_not_renewed_later_in_that_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """renew_due renews one handle at a time; an ack arriving meanwhile for a message later in the pass
    ends its renewal: changing the invisible time of an acked handle would store a new checkpoint that
    brings the acked message back."""
    from orbitmq.proxy.codec import ReceiptHandle
    from orbitmq.proxy.service import Renewal

    service = MessagingService(Backend(["127.0.0.1:1"]), ("127.0.0.1", 8081))
    md = Metadata("renew@1")
    service.clients.get_or_create(md)
    now = int(time.time() * 1000)
    handles = {mid: ReceiptHandle(0, now, 5000, 0, 0, "b", 0, offset) for offset, mid in enumerate(("first", "second"))}
    for mid, handle in handles.items():
        service.renewals[(md.client_id, "G", mid)] = Renewal(md, "T", handle, time.monotonic())
    release = asyncio.Event()
    entered = asyncio.Event()
    changed: list[int] = []

    async def handle_call(md_: Metadata, group: str, topic: str, text: str, code: int,
                          extra: dict[str, str] | None = None) -> tuple[ReceiptHandle, object]:
        handle = ReceiptHandle.decode(text)
        changed.append(handle.offset)
        entered.set()
        if handle.offset == 0:
            await release.wait()  # the first renewal is in flight ...
        return handle, type("Resp", (), {"ext_fields": {"popTime": str(now), "invisibleTime": "60000"}})()

    monkeypatch.setattr(service, "_handle_call", handle_call)
    renewing = asyncio.create_task(service.renew_due())
    await asyncio.wait_for(entered.wait(), 10)
    # ... when the client acks the second message (the handle the ack uses; renewal ends there).
    assert await service._latest_handle(md, "G", "second", "given") == handles["second"].encode()
    release.set()
    assert await asyncio.wait_for(renewing, 10) == 1
    assert changed == [0], "the acked message's handle was renewed after its ack"
