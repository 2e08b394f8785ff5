"""Local mode: a gRPC front inside a broker hands its requests for that broker to the broker's handlers
in-process (orbitmq/remoting/local.py) instead of over a loopback remoting connection; the results are
those of the remoting path, ACL applies alike, and slow, silent or failing handlers behave as over the wire."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from orbitmq.client import Producer
from orbitmq.errors import ConnectError, RequestTimeout
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.pb import service_pb2_grpc as sgrpc
from orbitmq.proxy.server import GrpcProxy, ProxyThread
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.local import LocalDispatch
from orbitmq.remoting.signing import AclCredentials, make_remoting_client
from orbitmq.remoting.transport import RemotingClient
from tests.acl.conftest import ADMIN, PLAIN_ACL, PUBLISHER
from tests.client.helpers import create_topic
from tests.support.dev import InProcessDev, inprocess_dev, unique_names

pytestmark = pytest.mark.timeout(90)

MD = [("x-mq-client-id", "local@1@0@x"), ("x-mq-language", "PYTHON"), ("x-mq-protocol", "GRPC_V2"),
      ("x-mq-client-version", "5.1.2"), ("x-mq-namespace", "")]


def _message(topic: str, body: bytes, kind: pb.MessageType = pb.NORMAL) -> pb.Message:
    m = pb.Message(body=body)
    m.topic.name = topic
    m.system_properties.message_id = uuid.uuid4().hex.upper()
    m.system_properties.message_type = kind
    m.system_properties.body_encoding = pb.IDENTITY
    return m


async def _scenario(stub: sgrpc.MessagingServiceStub, dev: InProcessDev) -> list[Any]:
    """Send, receive, change invisible duration, ack, a transaction committed and bad input; the
    observable results (ids and handles left out: they differ from run to run)."""
    topic, _, group = unique_names("lm")
    async with Producer(unique_names("lmp")[1], namesrv_addr=dev.namesrv) as producer:
        await create_topic(producer, topic, 1)
    seen: list[Any] = []
    hb = spb.HeartbeatRequest(client_type=pb.SIMPLE_CONSUMER)
    hb.group.name = group
    seen.append((await stub.Heartbeat(hb, metadata=MD, timeout=10)).status.code)
    for body in (b"one", b"two"):
        sent = await stub.SendMessage(spb.SendMessageRequest(messages=[_message(topic, body)]), metadata=MD, timeout=10)
        seen.append(("send", sent.status.code, [e.offset for e in sent.entries]))

    async def receive(seconds: int = 30) -> list[pb.Message]:
        req = spb.ReceiveMessageRequest(batch_size=8)
        req.group.name = group
        req.message_queue.topic.name = topic
        req.filter_expression.expression = "*"
        req.invisible_duration.FromSeconds(seconds)
        req.long_polling_timeout.FromSeconds(3)
        got: list[pb.Message] = []
        for _ in range(10):
            items = [x async for x in stub.ReceiveMessage(req, metadata=MD, timeout=20)]
            got = [i.message for i in items if i.HasField("message")]
            if got:
                break
        return got

    msgs = await receive()
    seen.append(("received", sorted((m.body, m.system_properties.queue_offset,
                                     m.system_properties.delivery_attempt) for m in msgs)))
    first, second = msgs[0].system_properties, msgs[1].system_properties
    change = spb.ChangeInvisibleDurationRequest(receipt_handle=first.receipt_handle, message_id=first.message_id)
    change.group.name = group
    change.topic.name = topic
    change.invisible_duration.FromSeconds(60)
    changed = await stub.ChangeInvisibleDuration(change, metadata=MD, timeout=10)
    seen.append(("changed", changed.status.code, changed.receipt_handle != first.receipt_handle))
    ack = spb.AckMessageRequest(entries=[
        spb.AckMessageEntry(message_id=first.message_id, receipt_handle=changed.receipt_handle),
        spb.AckMessageEntry(message_id=second.message_id, receipt_handle=second.receipt_handle),
        spb.AckMessageEntry(message_id="00", receipt_handle="forged"),
    ])
    ack.group.name = group
    ack.topic.name = topic
    acked = await stub.AckMessage(ack, metadata=MD, timeout=10)
    seen.append(("acked", acked.status.code, [e.status.code for e in acked.entries]))

    half = _message(topic, b"half", pb.TRANSACTION)
    sent = await stub.SendMessage(spb.SendMessageRequest(messages=[half]), metadata=MD, timeout=10)
    entry = sent.entries[0]
    seen.append(("half", sent.status.code, bool(entry.transaction_id)))
    end = spb.EndTransactionRequest(message_id=entry.message_id, transaction_id=entry.transaction_id,
                                    resolution=pb.COMMIT, source=pb.SOURCE_CLIENT)
    end.topic.name = topic
    seen.append(("end", (await stub.EndTransaction(end, metadata=MD, timeout=10)).status.code))
    committed = await receive()
    seen.append(("committed", [(m.body, m.system_properties.message_type) for m in committed]))
    unknown = await stub.SendMessage(spb.SendMessageRequest(messages=[_message("lm_no_such_topic", b"x")]),
                                     metadata=MD, timeout=10)
    seen.append(("unknown topic", unknown.status.code))
    return seen


def _broker_connections(proxy: GrpcProxy, broker: str) -> list[str]:
    return [addr for api in proxy.backend._clients.values() for addr in api.remoting._connections if addr == broker]


async def test_the_local_path_serves_in_process_with_the_results_of_the_remoting_path(tmp_path: Path) -> None:
    async with inprocess_dev(tmp_path) as dev:
        dispatch = dev.broker_server.local_dispatch()
        local = ProxyThread(GrpcProxy([dev.namesrv], "127.0.0.1", 0, local=dispatch))  # as in a broker
        remote = GrpcProxy([dev.namesrv], "127.0.0.1", 0)  # as `orbitmq proxy` builds it
        await local.start()
        await remote.start()
        try:
            results: list[Any] = []
            for proxy in (local.proxy, remote):
                before = dispatch.served
                async with grpc.aio.insecure_channel(f"127.0.0.1:{proxy.port}") as channel:
                    results.append(await _scenario(sgrpc.MessagingServiceStub(channel), dev))
                results.append(dispatch.served - before)
            local_seen, local_served, remote_seen, remote_served = results
            assert local_seen == remote_seen
            assert local_seen[1:3] == [("send", pb.OK, [0]), ("send", pb.OK, [1])]
            assert [body for body, _ in local_seen[-2][1]] == [b"half"]
            assert local_served >= 8 and remote_served == 0
            # No loopback remoting connection carried the local front's requests; the other front's did.
            assert _broker_connections(local.proxy, dev.broker) == []
            assert _broker_connections(remote, dev.broker) == [dev.broker]
        finally:
            await remote.close()
            await local.close()


async def test_acl_applies_in_process_as_over_the_wire(tmp_path: Path) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(PLAIN_ACL)
    async with inprocess_dev(tmp_path, aclEnable="true", aclConfigPath=str(acl_file)) as dev:
        dispatch = dev.broker_server.local_dispatch()

        async def both(creds: AclCredentials | None, code: int, fields: dict[str, str] | None) -> list[Any]:
            answers = []
            for in_process in (True, False):
                client = make_remoting_client(creds)
                if in_process:
                    client.local = dispatch.channel()
                try:
                    resp = await client.invoke(dev.broker, RemotingCommand.request(code, dict(fields or {})), 5.0)
                    answers.append((resp.code, resp.remark))
                    assert (dev.broker in client._connections) is not in_process
                finally:
                    await client.close()
            return answers

        forged = AclCredentials(PUBLISHER.access_key, "not-the-secret")
        wrong = await both(forged, RequestCode.GET_ALL_TOPIC_CONFIG, None)
        assert wrong[0] == wrong[1] and wrong[0][0] != ResponseCode.SUCCESS and "signature" in (wrong[0][1] or "")
        unsigned = await both(None, RequestCode.GET_ALL_TOPIC_CONFIG, None)
        assert unsigned[0] == unsigned[1] and unsigned[0][0] != ResponseCode.SUCCESS
        create = {"topic": "AclMade", "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1",
                  "perm": "6", "topicFilterType": "SINGLE_TAG"}
        denied = await both(PUBLISHER, RequestCode.UPDATE_AND_CREATE_TOPIC, create)  # an admin request
        assert denied[0] == denied[1] and denied[0][0] != ResponseCode.SUCCESS
        allowed = await both(ADMIN, RequestCode.GET_ALL_TOPIC_CONFIG, None)
        assert allowed == [(ResponseCode.SUCCESS, None)] * 2


async def until_true(probe: Callable[[], bool], timeout: float = 30) -> None:
    """Wait (on the running loop) until `probe()` holds; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not probe():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def test_slow_silent_failing_and_abandoned_handlers(tmp_path: Path) -> None:
    async with inprocess_dev(tmp_path) as dev:
        server = dev.broker_server.server
        assert server is not None
        release = asyncio.Event()
        events: list[str] = []

        entered: list[int] = []  # one item per call of `slow` that has started

        async def slow(request: RemotingCommand, peer: Peer) -> RemotingCommand:
            entered.append(1)
            try:
                await release.wait()
            except asyncio.CancelledError:
                events.append("cancelled")
                raise
            events.append("finished")
            return request.response(ResponseCode.SUCCESS, "late")

        async def silent(request: RemotingCommand, peer: Peer) -> None:
            return None

        async def failing(request: RemotingCommand, peer: Peer) -> RemotingCommand:
            raise KeyError("a defect")

        async def calls_back(request: RemotingCommand, peer: Peer) -> RemotingCommand:
            try:
                await peer.invoke(RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO), 1.0)
            except ConnectError as exc:
                return request.response(ResponseCode.SUCCESS, f"no channel back: {exc}")
            return request.response(ResponseCode.SYSTEM_ERROR, "a channel back?")

        for code, handler in ((9901, slow), (9902, silent), (9903, failing), (9904, calls_back)):
            server.register(code, handler)
        dispatch = dev.broker_server.local_dispatch()

        async def from_another_thread(work: Callable[[RemotingClient], Awaitable[Any]]) -> Any:
            """Run `work` on a loop of its own in another thread, as the in-broker front does."""
            async def run() -> Any:
                client = RemotingClient()
                client.local = dispatch.channel()
                try:
                    return await work(client)
                finally:
                    await client.close()
            return await asyncio.to_thread(asyncio.run, run())

        async def outcome(client: RemotingClient, code: int, timeout: float = 5.0) -> Any:
            try:
                resp = await client.invoke(dev.broker, RemotingCommand.request(code), timeout)
            except (RequestTimeout, ConnectError) as exc:
                return type(exc).__name__
            return resp.code, resp.remark

        failed = await from_another_thread(lambda c: outcome(c, 9903))
        assert failed[0] == ResponseCode.SYSTEM_ERROR and "KeyError" not in failed[1] and "a defect" not in failed[1]
        assert await from_another_thread(lambda c: outcome(c, 9902, 0.3)) == "RequestTimeout"
        assert (await from_another_thread(lambda c: outcome(c, 9904)))[1].startswith("no channel back")
        assert await from_another_thread(lambda c: outcome(c, 9999)) == (
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 9999 not supported")
        # A caller that gives up does not stop the handler (its late answer is dropped) ...
        client = RemotingClient()
        client.local = dispatch.channel()
        try:
            assert await outcome(client, 9901, 0.3) == "RequestTimeout"
            assert events == []
            release.set()
            await until_true(lambda: bool(events))
            assert events == ["finished"]
        finally:
            await client.close()
        # ... but a channel that closes cancels its handlers, as a lost connection does.
        release.clear()

        async def abandon(client: RemotingClient) -> Any:
            pending = asyncio.ensure_future(outcome(client, 9901))
            await until_true(lambda: len(entered) == 2)  # the handler runs: closing must cancel it
            assert client.local is not None
            client.local.close()
            return await pending

        assert await from_another_thread(abandon) == "ConnectError"
        await until_true(lambda: len(events) == 2)
        assert events == ["finished", "cancelled"]
        # A broker that closed refuses at once.
        channel = dispatch.channel()
    with pytest.raises(ConnectError):
        await asyncio.wait_for(channel.invoke(RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG), 5.0), 5.0)
    assert isinstance(dispatch, LocalDispatch) and dispatch.closed


async def test_closing_the_front_then_the_broker_leaves_nothing_running(tmp_path: Path) -> None:
    """A receive long-polling in the broker for the in-process front ends when the front closes; the
    broker then closes without waiting for it."""
    async with inprocess_dev(tmp_path) as dev:
        dispatch = dev.broker_server.local_dispatch()
        local = ProxyThread(GrpcProxy([dev.namesrv], "127.0.0.1", 0, local=dispatch))
        await local.start()
        topic, _, group = unique_names("lmc")
        async with Producer(unique_names("lmcp")[1], namesrv_addr=dev.namesrv) as producer:
            await create_topic(producer, topic, 1)
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{local.proxy.port}")
        try:
            stub = sgrpc.MessagingServiceStub(channel)
            req = spb.ReceiveMessageRequest(batch_size=8)
            req.group.name = group
            req.message_queue.topic.name = topic
            req.filter_expression.expression = "*"
            req.invisible_duration.FromSeconds(30)
            req.long_polling_timeout.FromSeconds(20)

            async def receive() -> list[spb.ReceiveMessageResponse]:
                return [x async for x in stub.ReceiveMessage(req, metadata=MD, timeout=30)]

            polling = asyncio.ensure_future(receive())
            def parked() -> bool:  # the POP_MESSAGE is parked in the broker
                pop = dev.broker_server.pop
                return bool(dispatch.running and pop is not None and len(pop.waiters))

            await until_true(parked)
            await asyncio.wait_for(local.close(), 15)
            assert not local._thread.is_alive()
            await until_true(lambda: not dispatch.running)
            polling.cancel()
            await asyncio.gather(polling, return_exceptions=True)
        finally:
            await channel.close()
    assert dispatch.closed
