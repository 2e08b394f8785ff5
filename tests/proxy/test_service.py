"""The gRPC front against `orbitmq dev`, through raw apache.rocketmq.v2 calls: routes, and bad input
answered with the protocol's status codes without disturbing anyone else."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from orbitmq.client import Producer
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.pb import service_pb2_grpc as sgrpc
from tests.client.helpers import create_topic
from tests.support.dev import unique_names
from tests.support.procs import ServerProcess, eventually, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(60)


class Front:
    def __init__(self, process: ServerProcess) -> None:
        self.process = process
        self.namesrv = process.addresses[0]
        self.proxy = next(x for x in process.output if x.startswith("proxy listening on ")).split()[-1]


@pytest.fixture(scope="module")
def front(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Front]:
    root: Path = tmp_path_factory.mktemp("grpc-front")
    process = start_server(orbitmq_command(
        "dev", "--store", str(root / "store"), "--namesrv-port", "0", "--broker-port", "0", "--host", "127.0.0.1",
        "--console", "off", "--no-metrics", "--grpc-port", "0",
    ), listeners=2, cwd=str(root))
    try:
        eventually(lambda: any(x.startswith("proxy listening on ") for x in process.output), timeout=30)
        yield Front(process)
    finally:
        process.stop()


@pytest.fixture
async def stub(front: Front) -> AsyncIterator[sgrpc.MessagingServiceStub]:
    async with grpc.aio.insecure_channel(front.proxy) as channel:
        yield sgrpc.MessagingServiceStub(channel)


def md(client_id: str = "test@1@0@x") -> list[tuple[str, str]]:
    return [("x-mq-client-id", client_id), ("x-mq-language", "PYTHON"), ("x-mq-protocol", "GRPC_V2"),
            ("x-mq-client-version", "5.1.2"), ("x-mq-namespace", "")]


async def topic_of(front: Front, queues: int = 2) -> str:
    topic, pg, _ = unique_names("gf")
    async with Producer(pg, namesrv_addr=front.namesrv) as producer:
        await create_topic(producer, topic, queues)
    return topic


def message(topic: str, body: bytes = b"x", **sp: Any) -> pb.Message:
    m = pb.Message(body=body)
    m.topic.name = topic
    m.system_properties.message_id = uuid.uuid4().hex.upper()
    m.system_properties.message_type = pb.NORMAL
    m.system_properties.body_encoding = pb.IDENTITY
    for key, value in sp.items():
        setattr(m.system_properties, key, value)
    return m


async def send(stub: sgrpc.MessagingServiceStub, m: pb.Message) -> spb.SendMessageResponse:
    return await stub.SendMessage(spb.SendMessageRequest(messages=[m]), metadata=md(), timeout=10)


async def test_route_points_every_queue_back_at_the_front(front: Front, stub: sgrpc.MessagingServiceStub) -> None:
    topic = await topic_of(front, queues=3)
    endpoints = pb.Endpoints(scheme=pb.IPv4, addresses=[pb.Address(host="127.0.0.1", port=9999)])
    req = spb.QueryRouteRequest(endpoints=endpoints)
    req.topic.name = topic
    resp = await stub.QueryRoute(req, metadata=md(), timeout=10)
    assert resp.status.code == pb.OK
    assert [q.id for q in resp.message_queues] == [0, 1, 2]
    for q in resp.message_queues:
        assert q.permission == pb.READ_WRITE and q.broker.id == 0
        assert q.broker.endpoints == endpoints  # the access point the client used
        assert set(q.accept_message_types) == {pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION}


async def test_unknown_and_illegal_topics(front: Front, stub: sgrpc.MessagingServiceStub) -> None:
    req = spb.QueryRouteRequest()
    req.topic.name = "no_such_topic_here"
    assert (await stub.QueryRoute(req, metadata=md(), timeout=10)).status.code == pb.TOPIC_NOT_FOUND
    req.topic.name = "bad topic!"
    assert (await stub.QueryRoute(req, metadata=md(), timeout=10)).status.code == pb.ILLEGAL_TOPIC
    resp = await send(stub, message("no_such_topic_here"))
    assert resp.status.code == pb.TOPIC_NOT_FOUND and len(resp.entries) == 1


async def test_malformed_protobuf_gets_bad_request(front: Front) -> None:
    async with grpc.aio.insecure_channel(front.proxy) as channel:
        raw = channel.unary_unary("/apache.rocketmq.v2.MessagingService/SendMessage")
        answer = spb.SendMessageResponse.FromString(await raw(b"\x0a\xff\xff\xff\xff", metadata=md(), timeout=10))
        assert answer.status.code == pb.BAD_REQUEST
        stream = channel.unary_stream("/apache.rocketmq.v2.MessagingService/ReceiveMessage")
        items = [spb.ReceiveMessageResponse.FromString(x) async for x in stream(b"\x12\x05\x0a", metadata=md(),
                                                                                  timeout=10)]
        assert [i.status.code for i in items] == [pb.BAD_REQUEST]


async def test_bad_messages_get_their_codes_and_others_keep_sending(
    front: Front, stub: sgrpc.MessagingServiceStub
) -> None:
    topic = await topic_of(front)
    cases = [
        (message(topic, b""), pb.MESSAGE_BODY_EMPTY),
        (message(topic, b"x" * (5 * 1024 * 1024)), pb.MESSAGE_BODY_TOO_LARGE),
        (message(topic, tag="a|b"), pb.ILLEGAL_MESSAGE_TAG),
        (message(topic, message_type=pb.FIFO), pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE),
        (message(topic, message_id=""), pb.ILLEGAL_MESSAGE_ID),
    ]
    far = message(topic, message_type=pb.DELAY)
    far.system_properties.delivery_timestamp.seconds = int(time.time() * 1000)  # epoch ms put in the seconds
    cases.append((far, pb.ILLEGAL_DELIVERY_TIME))
    reserved = message(topic)
    reserved.user_properties["TAGS"] = "x"
    cases.append((reserved, pb.ILLEGAL_MESSAGE_PROPERTY_KEY))
    for m, code in cases:
        resp = await send(stub, m)
        assert resp.status.code == code, (code, resp.status)
    good = await send(stub, message(topic, b"fine"))
    assert good.status.code == pb.OK and good.entries[0].message_id


async def test_a_topic_restricted_by_message_type(front: Front, stub: sgrpc.MessagingServiceStub) -> None:
    import asyncio
    import subprocess

    topic = await topic_of(front)
    done = await asyncio.to_thread(subprocess.run, orbitmq_command("admin", "updateTopic", "-n", front.namesrv, "-c", "DefaultCluster",
                                          "-t", topic, "-a", "+message.type=FIFO"),
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stdout + done.stderr

    async def accepted() -> list[int]:
        req = spb.QueryRouteRequest()
        req.topic.name = topic
        resp = await stub.QueryRoute(req, metadata=md(), timeout=10)
        return list(resp.message_queues[0].accept_message_types)

    deadline = time.monotonic() + 15
    while await accepted() != [pb.FIFO] and time.monotonic() < deadline:
        pass
    assert await accepted() == [pb.FIFO]
    assert (await send(stub, message(topic))).status.code == pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    fifo = message(topic, message_type=pb.FIFO, message_group="g1")
    assert (await send(stub, fifo)).status.code == pb.OK


async def test_forged_and_expired_receipt_handles(front: Front, stub: sgrpc.MessagingServiceStub) -> None:
    topic = await topic_of(front)
    group = unique_names("gf")[2]
    now = int(time.time() * 1000)
    expired = f"0 {now - 120_000} 60000 0 0 broker-a 0 0 0"
    for handle, remark in (("forged", "not one"), ("1 2 3", "not one"), (expired, "expired")):
        ack = spb.AckMessageRequest(entries=[spb.AckMessageEntry(message_id="X", receipt_handle=handle)])
        ack.group.name = group
        ack.topic.name = topic
        resp = await stub.AckMessage(ack, metadata=md(), timeout=10)
        assert resp.status.code == pb.INVALID_RECEIPT_HANDLE and remark in resp.status.message
        change = spb.ChangeInvisibleDurationRequest(receipt_handle=handle, message_id="X")
        change.group.name = group
        change.topic.name = topic
        change.invisible_duration.FromSeconds(5)
        resp2 = await stub.ChangeInvisibleDuration(change, metadata=md(), timeout=10)
        assert resp2.status.code == pb.INVALID_RECEIPT_HANDLE


async def test_other_bad_requests(front: Front, stub: sgrpc.MessagingServiceStub) -> None:
    topic = await topic_of(front)
    end = spb.EndTransactionRequest(message_id="X", transaction_id="nonsense", resolution=pb.COMMIT)
    end.topic.name = topic
    assert (await stub.EndTransaction(end, metadata=md(), timeout=10)).status.code == pb.INVALID_TRANSACTION_ID
    hb = spb.HeartbeatRequest(client_type=pb.PRODUCER)
    resp = await stub.Heartbeat(hb, metadata=[("x-mq-language", "PYTHON")], timeout=10)
    assert resp.status.code == pb.CLIENT_ID_REQUIRED
    recv = spb.ReceiveMessageRequest(batch_size=1)
    recv.group.name = "some_group"
    recv.message_queue.topic.name = topic
    recv.invisible_duration.FromSeconds(1)
    items = [x async for x in stub.ReceiveMessage(recv, metadata=md(), timeout=10)]
    assert [i.status.code for i in items] == [pb.ILLEGAL_INVISIBLE_TIME]
    recv.message_queue.topic.name = "no_such_topic_here"
    items = [x async for x in stub.ReceiveMessage(recv, metadata=md(), timeout=10)]
    assert [i.status.code for i in items] == [pb.TOPIC_NOT_FOUND]


async def test_telemetry_answers_settings_and_survives_garbage(front: Front) -> None:
    async with grpc.aio.insecure_channel(front.proxy) as channel:
        raw = channel.stream_stream("/apache.rocketmq.v2.MessagingService/Telemetry")
        call = raw(metadata=md("tele@1@0@y"), timeout=20)
        await call.write(b"\x12\xff\xff")
        first = spb.TelemetryCommand.FromString(await call.read())
        assert first.status.code == pb.BAD_REQUEST
        settings = spb.TelemetryCommand()
        settings.settings.client_type = pb.PRODUCER
        settings.settings.publishing.topics.add().name = "whatever"
        await call.write(settings.SerializeToString())
        reply = spb.TelemetryCommand.FromString(await call.read())
        assert reply.status.code == pb.OK
        assert reply.settings.publishing.max_body_size == 4 * 1024 * 1024 and not reply.settings.metric.on
        await call.done_writing()


async def _online_consumer(
    channel: grpc.aio.Channel, stub: sgrpc.MessagingServiceStub, topic: str, group: str, client_id: str
) -> Any:
    """A raw SimpleConsumer: its Telemetry stream (settings answered) and one heartbeat (registered)."""
    telemetry = sgrpc.MessagingServiceStub(channel).Telemetry(metadata=md(client_id), timeout=40)
    settings = spb.TelemetryCommand()
    settings.settings.client_type = pb.SIMPLE_CONSUMER
    settings.settings.subscription.group.name = group
    entry = settings.settings.subscription.subscriptions.add()
    entry.topic.name = topic
    entry.expression.expression = "*"
    await telemetry.write(settings)
    assert (await telemetry.read()).status.code == pb.OK
    hb = spb.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER)
    hb.group.name = group
    assert (await stub.Heartbeat(hb, metadata=md(client_id), timeout=10)).status.code == pb.OK
    return telemetry


async def test_admin_consumer_status_asks_a_grpc_client_for_its_stacks(
    front: Front, stub: sgrpc.MessagingServiceStub
) -> None:
    import asyncio
    import subprocess

    topic = await topic_of(front)
    group = unique_names("gf")[2]
    client_id = f"stack@1@0@{uuid.uuid4().hex[:6]}"
    async with grpc.aio.insecure_channel(front.proxy) as channel:
        telemetry = await _online_consumer(channel, stub, topic, group, client_id)

        async def answer_one() -> str:
            command = await telemetry.read()
            nonce = command.print_thread_stack_trace_command.nonce
            reply = spb.TelemetryCommand()
            reply.thread_stack_trace.nonce = nonce
            reply.thread_stack_trace.thread_stack_trace = "STACK-OF-THE-GRPC-CLIENT"
            await telemetry.write(reply)
            return nonce

        answering = asyncio.create_task(answer_one())
        done = await asyncio.to_thread(
            subprocess.run, orbitmq_command("admin", "consumerStatus", "-n", front.namesrv, "-g", group,
                                            "-i", client_id, "-s"),
            capture_output=True, text=True, timeout=30, check=False)
        assert await asyncio.wait_for(answering, 10)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "STACK-OF-THE-GRPC-CLIENT" in done.stdout and "CONSUME_POP" in done.stdout
        await telemetry.done_writing()


async def test_orbitmq_proxy_serves_a_cluster_through_its_nameserver(front: Front) -> None:
    """`orbitmq proxy` as its own process (RocketMQ 5's cluster mode) in front of the dev broker."""
    proxy = start_server(orbitmq_command("proxy", "--namesrv", front.namesrv, "--port", "0"), listeners=0)
    try:
        eventually(lambda: any(x.startswith("proxy listening on ") for x in proxy.output), timeout=30)
        addr = next(x for x in proxy.output if x.startswith("proxy listening on ")).split()[-1]
        assert addr != front.proxy
        topic = await topic_of(front)
        async with grpc.aio.insecure_channel(addr) as channel:
            own = sgrpc.MessagingServiceStub(channel)
            req = spb.QueryRouteRequest()
            req.topic.name = topic
            route = await own.QueryRoute(req, metadata=md(), timeout=10)
            assert route.status.code == pb.OK and len(route.message_queues) == 2
            assert route.message_queues[0].broker.endpoints.addresses[0].port == int(addr.rsplit(":", 1)[1])
            sent = await own.SendMessage(spb.SendMessageRequest(messages=[message(topic, b"via cluster proxy")]),
                                         metadata=md(), timeout=10)
            assert sent.status.code == pb.OK
    finally:
        assert proxy.stop() == 0


async def _receive(stub: sgrpc.MessagingServiceStub, topic: str, group: str) -> list[spb.ReceiveMessageResponse]:
    req = spb.ReceiveMessageRequest(batch_size=8)
    req.group.name = group
    req.message_queue.topic.name = topic
    req.filter_expression.expression = "*"
    req.invisible_duration.FromSeconds(30)
    req.long_polling_timeout.FromSeconds(5)
    return [x async for x in stub.ReceiveMessage(req, metadata=md(), timeout=20)]


async def test_a_message_forwarded_to_the_dead_letter_queue(front: Front, stub: sgrpc.MessagingServiceStub) -> None:
    from orbitmq.client import LitePullConsumer

    topic = await topic_of(front)
    group = unique_names("gf")[2]
    assert [i.status.code for i in await _receive(stub, topic, group)] == [pb.MESSAGE_NOT_FOUND]  # joins
    assert (await send(stub, message(topic, b"poison"))).status.code == pb.OK
    items: list[spb.ReceiveMessageResponse] = []
    deadline = time.monotonic() + 20
    while not any(i.HasField("message") for i in items) and time.monotonic() < deadline:
        items = await _receive(stub, topic, group)
    assert items[0].status.code == pb.OK
    got = [i.message for i in items if i.HasField("message")]
    assert [m.body for m in got] == [b"poison"] and got[0].system_properties.delivery_attempt == 1
    sp = got[0].system_properties
    fwd = spb.ForwardMessageToDeadLetterQueueRequest(receipt_handle=sp.receipt_handle, message_id=sp.message_id,
                                                     delivery_attempt=1, max_delivery_attempts=1)
    fwd.group.name = group
    fwd.topic.name = topic
    assert (await stub.ForwardMessageToDeadLetterQueue(fwd, metadata=md(), timeout=10)).status.code == pb.OK
    reader = LitePullConsumer(group + "_dlq", namesrv_addr=front.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    reader.subscribe(f"%DLQ%{group}", "*")
    await reader.start()
    try:
        dlq: list[Any] = []
        deadline = time.monotonic() + 20
        while not dlq and time.monotonic() < deadline:
            dlq = await reader.poll(timeout=2) or []
        assert [m.body for m in dlq] == [b"poison"]
    finally:
        await reader.shutdown()
    # Acked as it moved: the group has nothing left.
    assert [i.status.code for i in await _receive(stub, topic, group)] == [pb.MESSAGE_NOT_FOUND]


async def test_one_ack_of_many_entries_answers_each_in_order(front: Front, stub: sgrpc.MessagingServiceStub) -> None:
    """The entries of one AckMessage are acked together; each gets its own status, in the request's order."""
    topic = await topic_of(front)
    group = unique_names("gf")[2]
    assert [i.status.code for i in await _receive(stub, topic, group)] == [pb.MESSAGE_NOT_FOUND]  # joins
    for body in (b"a", b"b", b"c"):
        assert (await send(stub, message(topic, body))).status.code == pb.OK
    got: list[pb.Message] = []
    deadline = time.monotonic() + 20
    while len(got) < 3 and time.monotonic() < deadline:
        got += [i.message for i in await _receive(stub, topic, group) if i.HasField("message")]
    assert sorted(m.body for m in got) == [b"a", b"b", b"c"]
    entries = [spb.AckMessageEntry(message_id=m.system_properties.message_id,
                                   receipt_handle=m.system_properties.receipt_handle) for m in got]
    entries.insert(1, spb.AckMessageEntry(message_id="FORGED", receipt_handle="forged"))
    ack = spb.AckMessageRequest(entries=entries)
    ack.group.name = group
    ack.topic.name = topic
    resp = await stub.AckMessage(ack, metadata=md(), timeout=10)
    assert resp.status.code == pb.MULTIPLE_RESULTS
    assert [e.message_id for e in resp.entries] == [e.message_id for e in entries]
    assert [e.status.code for e in resp.entries] == [pb.OK, pb.INVALID_RECEIPT_HANDLE, pb.OK, pb.OK]


async def _push_consumer_joins(stub: sgrpc.MessagingServiceStub, group: str) -> None:
    hb = spb.HeartbeatRequest(client_type=pb.PUSH_CONSUMER)
    hb.group.name = group
    assert (await stub.Heartbeat(hb, metadata=md(), timeout=10)).status.code == pb.OK


async def _push_receive(
    stub: sgrpc.MessagingServiceStub, topic: str, group: str, auto: bool, invisible_s: int
) -> list[pb.Message]:
    """One ReceiveMessage as a PushConsumer makes it: auto_renew, or else `invisible_s` of invisible time."""
    req = spb.ReceiveMessageRequest(batch_size=4, auto_renew=auto)
    req.group.name = group
    req.message_queue.topic.name = topic
    req.filter_expression.expression = "*"
    if not auto:
        req.invisible_duration.FromSeconds(invisible_s)
    req.long_polling_timeout.FromSeconds(5)
    items = [x async for x in stub.ReceiveMessage(req, metadata=md(), timeout=20)]
    return [i.message for i in items if i.HasField("message")]


async def test_auto_renew_keeps_a_message_hidden_and_the_first_handle_still_acks(front: Front) -> None:
    """A receive with auto_renew and no invisible duration (PushConsumer): the proxy renews the message
    until the client acks it, and swaps the client's first handle for its newest one."""
    import asyncio

    from orbitmq.proxy.server import GrpcProxy

    proxy = GrpcProxy([front.namesrv], "127.0.0.1", 0)
    proxy.renew_scan_seconds = 0.2
    await proxy.start()
    assert proxy.service is not None
    service = proxy.service
    service.auto_renew_ms, service.renew_window_ms = 2_000, 1_000
    try:
        topic = await topic_of(front)
        group = unique_names("gf")[2]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{proxy.port}") as channel:
            own = sgrpc.MessagingServiceStub(channel)
            await _push_consumer_joins(own, group)

            async def receive(auto: bool) -> list[pb.Message]:
                return await _push_receive(own, topic, group, auto, invisible_s=10)

            assert await receive(True) == []  # the group joins
            assert (await own.SendMessage(spb.SendMessageRequest(messages=[message(topic, b"slow")]),
                                          metadata=md(), timeout=10)).status.code == pb.OK
            got: list[pb.Message] = []
            deadline = time.monotonic() + 20
            while not got and time.monotonic() < deadline:
                got = await receive(True)
            first = got[0].system_properties
            # Renewed twice: well past the first invisible time, the message is still hidden.
            deadline = time.monotonic() + 20
            while not any(r.count >= 2 for r in service.renewals.values()) and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert any(r.count >= 2 for r in service.renewals.values())
            assert await receive(False) == []
            ack = spb.AckMessageRequest(entries=[spb.AckMessageEntry(message_id=first.message_id,
                                                                     receipt_handle=first.receipt_handle)])
            ack.group.name = group
            ack.topic.name = topic
            assert (await own.AckMessage(ack, metadata=md(), timeout=10)).status.code == pb.OK
            assert not service.renewals
            # Acked with the newest handle: it never comes back, even after the last invisible time.
            end = time.monotonic() + 4
            while time.monotonic() < end:
                assert await receive(False) == []
    finally:
        await proxy.close()


async def test_an_ack_arriving_while_a_renewal_is_in_flight_acks_the_renewed_handle(front: Front) -> None:
    """The broker moves the message to a new checkpoint as soon as it handles the renewal; an ack that
    used the handle being replaced left that checkpoint to bring the acked message back."""
    import asyncio

    from orbitmq.proxy import service as service_module
    from orbitmq.proxy.server import GrpcProxy

    proxy = GrpcProxy([front.namesrv], "127.0.0.1", 0)
    proxy.renew_scan_seconds = 3600.0  # renewals run only when the test calls renew_due
    await proxy.start()
    assert proxy.service is not None
    service = proxy.service
    service.auto_renew_ms, service.renew_window_ms = 10_000, 20_000  # every renewal is due at once
    answered = asyncio.Event()
    release = asyncio.Event()
    real_call = service._handle_call

    async def slow_change(*args: Any, **kwargs: Any) -> Any:
        result = await real_call(*args, **kwargs)
        if args[4] == service_module.CHANGE_MESSAGE_INVISIBLETIME:
            answered.set()  # the broker has renewed; the proxy has not seen the answer yet
            await release.wait()
        return result

    service._handle_call = slow_change  # type: ignore[method-assign]
    try:
        topic = await topic_of(front)
        group = unique_names("gr")[2]
        async with grpc.aio.insecure_channel(f"127.0.0.1:{proxy.port}") as channel:
            own = sgrpc.MessagingServiceStub(channel)
            await _push_consumer_joins(own, group)

            async def receive(auto: bool) -> list[pb.Message]:
                return await _push_receive(own, topic, group, auto, invisible_s=10)

            assert await receive(True) == []  # the group joins
            assert (await own.SendMessage(spb.SendMessageRequest(messages=[message(topic, b"raced")]),
                                          metadata=md(), timeout=10)).status.code == pb.OK
            got: list[pb.Message] = []
            deadline = time.monotonic() + 20
            while not got and time.monotonic() < deadline:
                got = await receive(True)
            first = got[0].system_properties
            renewing = asyncio.create_task(service.renew_due())
            await asyncio.wait_for(answered.wait(), 10)
            ack = spb.AckMessageRequest(entries=[spb.AckMessageEntry(message_id=first.message_id,
                                                                     receipt_handle=first.receipt_handle)])
            ack.group.name = group
            ack.topic.name = topic
            acking = asyncio.ensure_future(own.AckMessage(ack, metadata=md(), timeout=10))
            deadline = time.monotonic() + 10
            while service.renewals and time.monotonic() < deadline:  # the ack has reached the proxy
                await asyncio.sleep(0.01)
            assert not service.renewals
            release.set()
            assert await asyncio.wait_for(renewing, 10) == 0  # acked meanwhile: not counted as renewed
            assert (await acking).status.code == pb.OK
            assert not service.renewals
            # The renewed checkpoint was acked: after its 10 s invisible time the message stays gone.
            end = time.monotonic() + 12
            while time.monotonic() < end:
                assert await receive(False) == []
    finally:
        await proxy.close()


async def test_a_namespace_prefixes_topics_and_groups(front: Front, stub: sgrpc.MessagingServiceStub) -> None:
    """Resources with a namespace are RocketMQ's `namespace%name` on the brokers, and come back split."""
    topic, pg, group = unique_names("gf")
    async with Producer(pg, namesrv_addr=front.namesrv) as producer:
        await create_topic(producer, f"ns1%{topic}", 2)
    req = spb.QueryRouteRequest()
    req.topic.resource_namespace, req.topic.name = "ns1", topic
    route = await stub.QueryRoute(req, metadata=md(), timeout=10)
    assert route.status.code == pb.OK and route.message_queues[0].topic.resource_namespace == "ns1"
    recv = spb.ReceiveMessageRequest(batch_size=4)
    recv.group.resource_namespace, recv.group.name = "ns1", group
    recv.message_queue.topic.resource_namespace, recv.message_queue.topic.name = "ns1", topic
    recv.filter_expression.expression = "*"
    recv.invisible_duration.FromSeconds(30)
    recv.long_polling_timeout.FromSeconds(5)
    assert [i.status.code async for i in stub.ReceiveMessage(recv, metadata=md(), timeout=20)] == [
        pb.MESSAGE_NOT_FOUND]  # the group joins
    m = message(topic, b"in a namespace")
    m.topic.resource_namespace = "ns1"
    assert (await send(stub, m)).status.code == pb.OK
    got: list[pb.Message] = []
    deadline = time.monotonic() + 20
    while not got and time.monotonic() < deadline:
        got = [i.message async for i in stub.ReceiveMessage(recv, metadata=md(), timeout=20) if i.HasField("message")]
    assert [(g.topic.resource_namespace, g.topic.name, g.body) for g in got] == [("ns1", topic, b"in a namespace")]
    plain = message(topic, b"no namespace")
    assert (await send(stub, plain)).status.code == pb.TOPIC_NOT_FOUND  # `topic` alone does not exist


async def test_consume_message_directly_asks_a_grpc_client_to_verify(
    front: Front, stub: sgrpc.MessagingServiceStub
) -> None:
    import asyncio
    import subprocess

    from orbitmq.client import Message

    topic, pg, group = unique_names("gf")
    client_id = f"verify@1@0@{uuid.uuid4().hex[:6]}"
    async with Producer(pg, namesrv_addr=front.namesrv) as producer:
        await create_topic(producer, topic, 2)
        sent = await producer.send(Message(topic, b"check me"))
    async with grpc.aio.insecure_channel(front.proxy) as channel:
        telemetry = await _online_consumer(channel, stub, topic, group, client_id)

        async def verify_one() -> bytes:
            command = await telemetry.read()
            reply = spb.TelemetryCommand()
            reply.verify_message_result.nonce = command.verify_message_command.nonce
            await telemetry.write(reply)
            return bytes(command.verify_message_command.message.body)

        verifying = asyncio.create_task(verify_one())
        done = await asyncio.to_thread(
            subprocess.run, orbitmq_command("admin", "consumeMessageDirectly", "-n", front.namesrv, "-g", group,
                                            "-d", client_id, "-i", sent.offset_msg_id),
            capture_output=True, text=True, timeout=30, check=False)
        assert await asyncio.wait_for(verifying, 10) == b"check me"
        assert done.returncode == 0 and "CR_SUCCESS" in done.stdout, done.stdout + done.stderr
        await telemetry.done_writing()


async def test_an_unknown_group_when_groups_are_not_auto_created(tmp_path: Path) -> None:
    (tmp_path / "broker.conf").write_text("autoCreateSubscriptionGroup=false\n")
    process = start_server(orbitmq_command(
        "dev", "--store", str(tmp_path / "store"), "--namesrv-port", "0", "--broker-port", "0", "--host", "127.0.0.1",
        "--console", "off", "--no-metrics", "--grpc-port", "0", "-c", str(tmp_path / "broker.conf"),
    ), listeners=2, cwd=str(tmp_path))
    try:
        eventually(lambda: any(x.startswith("proxy listening on ") for x in process.output), timeout=30)
        own = Front(process)
        topic = await topic_of(own)
        async with grpc.aio.insecure_channel(own.proxy) as channel:
            recv = spb.ReceiveMessageRequest(batch_size=1)
            recv.group.name = "never_made_group"
            recv.message_queue.topic.name = topic
            recv.invisible_duration.FromSeconds(30)
            recv.long_polling_timeout.FromSeconds(5)
            items = [x async for x in sgrpc.MessagingServiceStub(channel).ReceiveMessage(recv, metadata=md(),
                                                                                         timeout=20)]
            assert [i.status.code for i in items] == [pb.CONSUMER_GROUP_NOT_FOUND]
    finally:
        process.stop()


async def test_a_broker_runs_the_front_in_process_with_enable_grpc_proxy(front: Front, tmp_path: Path) -> None:
    """Local mode: broker.conf's enableGrpcProxy/grpcServerPort; the front routes through namesrvAddr."""
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-local\nenableGrpcProxy=true\ngrpcServerPort=0\n")
    broker = start_server(orbitmq_command("broker", "--listen", "127.0.0.1:0", "--store", str(tmp_path / "store"),
                                          "-n", front.namesrv, "-c", str(conf)))
    try:
        eventually(lambda: any(x.startswith("proxy listening on ") for x in broker.output), timeout=30)
        addr = next(x for x in broker.output if x.startswith("proxy listening on ")).split()[-1]
        topic = await topic_of(front)
        async with grpc.aio.insecure_channel(addr.replace("0.0.0.0", "127.0.0.1")) as channel:
            req = spb.QueryRouteRequest()
            req.topic.name = topic
            route = await sgrpc.MessagingServiceStub(channel).QueryRoute(req, metadata=md(), timeout=10)
            assert route.status.code == pb.OK and route.message_queues
    finally:
        assert broker.stop() == 0


def test_enable_grpc_proxy_without_a_nameserver_is_refused(tmp_path: Path) -> None:
    import subprocess

    conf = tmp_path / "broker.conf"
    conf.write_text("enableGrpcProxy=true\n")
    done = subprocess.run(orbitmq_command("broker", "--listen", "127.0.0.1:0", "--store", str(tmp_path / "s"),
                                          "-c", str(conf)), capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "enableGrpcProxy" in done.stderr and "namesrvAddr" in done.stderr


# --- orderly (FIFO) consumer groups ------------------------------------------------------------------


async def _admin_ok(*args: str) -> str:
    import asyncio
    import subprocess

    done = await asyncio.to_thread(subprocess.run, orbitmq_command("admin", *args), capture_output=True, text=True,
                                   timeout=30, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def _fifo_setting(proxy: str, topic: str, group: str) -> bool | None:
    """The Settings reply's `subscription.fifo` for a simple consumer of `group` on `topic` (None: no route yet)."""
    reply = await _consumer_settings(proxy, topic, group)
    return None if reply is None else bool(reply.subscription.fifo)


async def _consumer_settings(proxy: str, topic: str, group: str) -> pb.Settings | None:
    """The Settings reply for a simple consumer of `group` on `topic` (None: no route yet)."""
    async with grpc.aio.insecure_channel(proxy) as channel:
        stub = sgrpc.MessagingServiceStub(channel)
        route = spb.QueryRouteRequest()
        route.topic.name = topic
        if (await stub.QueryRoute(route, metadata=md(), timeout=10)).status.code != pb.OK:
            return None
        call = stub.Telemetry(metadata=md(f"fifo@1@0@{uuid.uuid4().hex[:8]}"), timeout=10)
        command = spb.TelemetryCommand()
        command.settings.client_type = pb.SIMPLE_CONSUMER
        command.settings.subscription.group.name = group
        entry = command.settings.subscription.subscriptions.add()
        entry.topic.name = topic
        entry.expression.expression = "*"
        await call.write(command)
        reply = await call.read()
        await call.done_writing()
        assert reply.status.code == pb.OK
        return reply.settings


async def _until_fifo_setting(proxy: str, topic: str, group: str, want: bool) -> None:
    """The proxy reads the brokers' group tables every few seconds: wait until it reports `want`."""
    deadline = time.monotonic() + 20
    while await _fifo_setting(proxy, topic, group) is not want and time.monotonic() < deadline:
        pass
    assert await _fifo_setting(proxy, topic, group) is want


async def _assigned_queue_ids(stub: sgrpc.MessagingServiceStub, topic: str, group: str) -> list[int]:
    req = spb.QueryAssignmentRequest()
    req.topic.name = topic
    req.group.name = group
    resp = await stub.QueryAssignment(req, metadata=md(), timeout=10)
    assert resp.status.code == pb.OK
    return sorted(a.message_queue.id for a in resp.assignments)


async def _batch(stub: sgrpc.MessagingServiceStub, topic: str, group: str, size: int = 2) -> list[pb.Message]:
    """One ReceiveMessage; its 4 s deadline keeps the long polling at 2.5 s (the proxy answers in time)."""
    req = spb.ReceiveMessageRequest(batch_size=size)
    req.group.name = group
    req.message_queue.topic.name = topic
    req.filter_expression.expression = "*"
    req.invisible_duration.FromSeconds(30)
    req.long_polling_timeout.FromSeconds(5)
    return [i.message async for i in stub.ReceiveMessage(req, metadata=md(), timeout=4) if i.HasField("message")]


async def _ack(stub: sgrpc.MessagingServiceStub, topic: str, group: str, msgs: list[pb.Message]) -> None:
    ack = spb.AckMessageRequest(entries=[spb.AckMessageEntry(message_id=m.system_properties.message_id,
                                                             receipt_handle=m.system_properties.receipt_handle)
                                         for m in msgs])
    ack.group.name = group
    ack.topic.name = topic
    assert (await stub.AckMessage(ack, metadata=md(), timeout=10)).status.code == pb.OK


async def _one_queue_topic(front: Front, fifo: bool) -> str:
    topic = unique_names("gf")[0]
    args = ["updateTopic", "-n", front.namesrv, "-c", "DefaultCluster", "-t", topic, "-r", "1", "-w", "1"]
    await _admin_ok(*args, *(["-a", "+message.type=FIFO"] if fifo else []))
    return topic


def _ordered_message(topic: str, body: bytes, fifo: bool) -> pb.Message:
    return message(topic, body, message_type=pb.FIFO, message_group="g1") if fifo else message(topic, body)


@pytest.mark.parametrize("fifo_topic", [True, False], ids=["fifo-topic", "normal-topic"])
async def test_an_orderly_group_gets_its_queue_one_batch_at_a_time(
    front: Front, stub: sgrpc.MessagingServiceStub, fifo_topic: bool
) -> None:
    """RocketMQ 5: FIFO consumption is the group's consumeMessageOrderly (updateSubGroup -o true), on a FIFO
    topic or a normal one: Settings say fifo, every queue is assigned, and a queue's next batch waits for the
    acks of the last one."""
    topic = await _one_queue_topic(front, fifo_topic)
    group = unique_names("gf")[2]
    await _admin_ok("updateSubGroup", "-n", front.namesrv, "-c", "DefaultCluster", "-g", group, "-o", "true")
    await _until_fifo_setting(front.proxy, topic, group, True)
    assert await _assigned_queue_ids(stub, topic, group) == [0]
    assert await _batch(stub, topic, group) == []  # the group joins at the end of the queue
    sent = [f"m{i}".encode() for i in range(5)]
    for body in sent:
        assert (await send(stub, _ordered_message(topic, body, fifo_topic))).status.code == pb.OK
    got: list[pb.Message] = []
    blocked_checked = False
    deadline = time.monotonic() + 30
    while len(got) < len(sent) and time.monotonic() < deadline:
        batch = await _batch(stub, topic, group)
        if not batch:
            continue
        got += batch
        if not blocked_checked:
            assert await _batch(stub, topic, group) == []  # un-acked: the queue is held for the group
            blocked_checked = True
        await _ack(stub, topic, group, batch)
    assert [m.body for m in got] == sent and blocked_checked
    assert {m.system_properties.message_type for m in got} == {pb.FIFO if fifo_topic else pb.NORMAL}


async def test_a_fifo_topic_read_by_a_group_that_is_not_orderly_is_consumed_concurrently(
    front: Front, stub: sgrpc.MessagingServiceStub
) -> None:
    topic = await _one_queue_topic(front, True)
    group = unique_names("gf")[2]
    await _until_fifo_setting(front.proxy, topic, group, False)
    assert await _assigned_queue_ids(stub, topic, group) == [-1]
    assert await _batch(stub, topic, group) == []  # joins
    sent = [f"m{i}".encode() for i in range(5)]
    for body in sent:
        assert (await send(stub, _ordered_message(topic, body, True))).status.code == pb.OK
    got: list[pb.Message] = []
    deadline = time.monotonic() + 30
    while len(got) < len(sent) and time.monotonic() < deadline:
        got += await _batch(stub, topic, group)  # never acked: the next batch comes all the same
    assert sorted(m.body for m in got) == sent


async def test_the_orderly_flag_survives_a_restart(tmp_path: Path) -> None:
    command = orbitmq_command(
        "dev", "--store", str(tmp_path / "store"), "--namesrv-port", "0", "--broker-port", "0", "--host", "127.0.0.1",
        "--console", "off", "--no-metrics", "--grpc-port", "0",
    )
    topic, _, group = unique_names("gf")

    def start() -> Front:
        process = start_server(command, listeners=2, cwd=str(tmp_path))
        eventually(lambda: any(x.startswith("proxy listening on ") for x in process.output), timeout=30)
        return Front(process)

    first = start()
    try:
        await _admin_ok("updateTopic", "-n", first.namesrv, "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2")
        await _admin_ok("updateSubGroup", "-n", first.namesrv, "-c", "DefaultCluster", "-g", group, "-o", "true")
        await _until_fifo_setting(first.proxy, topic, group, True)
    finally:
        assert first.process.stop() == 0
    again = start()
    try:
        await _until_fifo_setting(again.proxy, topic, group, True)
        async with grpc.aio.insecure_channel(again.proxy) as channel:
            assert await _assigned_queue_ids(sgrpc.MessagingServiceStub(channel), topic, group) == [0, 1]
        out = await _admin_ok("getConsumerConfig", "-n", again.namesrv, "-g", group)
        assert f"{'consumeMessageOrderly':<40}=  true" in out.splitlines()
    finally:
        again.process.stop()


def _backoff(settings: pb.Settings | None) -> tuple[int, str, tuple[int, ...]] | None:
    """(max_attempts, strategy, delays in ms: the customized list or initial, max, multiplier)."""
    if settings is None:
        return None
    policy = settings.backoff_policy
    which = policy.WhichOneof("strategy") or ""
    if which == "customized_backoff":
        values = tuple(d.ToMilliseconds() for d in policy.customized_backoff.next)
    else:
        eb = policy.exponential_backoff
        values = (eb.initial.ToMilliseconds(), eb.max.ToMilliseconds(), int(eb.multiplier))
    return policy.max_attempts, which, values


async def _until_backoff(proxy: str, topic: str, group: str, want: tuple[int, str, tuple[int, ...]]) -> None:
    """The proxy reads the brokers' group tables every few seconds: wait until a consumer's Settings say `want`."""
    deadline = time.monotonic() + 20
    while _backoff(await _consumer_settings(proxy, topic, group)) != want and time.monotonic() < deadline:
        pass
    assert _backoff(await _consumer_settings(proxy, topic, group)) == want


async def test_a_consumers_retry_settings_follow_its_group_as_changed_with_admin(front: Front) -> None:
    """RocketMQ 5: a consumer's Settings carry max_attempts = retryMaxTimes + 1 and the group's groupRetryPolicy;
    `updateSubGroup -r/-p` reaches new Settings once the proxy has read the brokers' tables again."""
    topic = await topic_of(front)
    group = unique_names("gf")[2]
    default = tuple(s * 1000 for s in (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800,
                                       3600, 7200))
    await _until_backoff(front.proxy, topic, group, (17, "customized_backoff", default))
    exp = '{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":2000,"max":90000,"multiplier":3}}'
    await _admin_ok("updateSubGroup", "-n", front.namesrv, "-c", "DefaultCluster", "-g", group, "-r", "1", "-p", exp)
    await _until_backoff(front.proxy, topic, group, (2, "exponential_backoff", (2000, 90_000, 3)))
    custom = '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[3000,6000]}}'
    await _admin_ok("updateSubGroup", "-n", front.namesrv, "-c", "DefaultCluster", "-g", group, "-r", "4",
                    "-p", custom)
    await _until_backoff(front.proxy, topic, group, (5, "customized_backoff", (3000, 6000)))


async def test_a_message_renewed_for_its_maximum_time_comes_back_after_the_groups_delay(front: Front) -> None:
    """As RocketMQ 5's proxy: when automatic renewal has run for its maximum time, the message is made
    visible again after the group's retry policy delay for its reconsume times (here 1 s, where the
    renewal's own invisible time would hide it for a minute)."""
    import asyncio

    from orbitmq.proxy.server import GrpcProxy

    topic = await topic_of(front, queues=1)
    group = unique_names("gf")[2]
    policy = '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[60000,60000,1000]}}'  # reconsume 0 -> index 2
    await _admin_ok("updateSubGroup", "-n", front.namesrv, "-c", "DefaultCluster", "-g", group, "-p", policy)
    proxy = GrpcProxy([front.namesrv], "127.0.0.1", 0)
    proxy.renew_scan_seconds = 0.2
    await proxy.start()
    assert proxy.service is not None
    service = proxy.service
    service.auto_renew_ms = service.renew_window_ms = 60_000
    service.max_renew_ms = 3_600_000  # renewing until the message is received, then stopped
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{proxy.port}") as channel:
            own = sgrpc.MessagingServiceStub(channel)
            await _push_consumer_joins(own, group)

            async def receive(auto: bool) -> list[pb.Message]:
                return await _push_receive(own, topic, group, auto, invisible_s=30)

            assert await receive(True) == []  # the group joins
            assert (await own.SendMessage(spb.SendMessageRequest(messages=[message(topic, b"held")]),
                                          metadata=md(), timeout=10)).status.code == pb.OK
            got: list[pb.Message] = []
            deadline = time.monotonic() + 20
            while not got and time.monotonic() < deadline:
                got = await receive(True)
            assert [m.body for m in got] == [b"held"]
            deadline = time.monotonic() + 10
            while not any(r.count >= 1 for r in service.renewals.values()) and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            assert service.renewals  # renewed, and still held
            service.max_renew_ms = 0
            again: list[pb.Message] = []
            deadline = time.monotonic() + 20
            while not again and time.monotonic() < deadline:
                again = await receive(False)
            assert [m.body for m in again] == [b"held"] and not service.renewals
            assert again[0].system_properties.delivery_attempt == 2
    finally:
        await proxy.close()
