"""Idempotent sends through `orbitmq dev`: a send whose response is lost is retried and stored once.

A proxy on 127.0.0.1 sits between the producer and the broker. The first response the broker
gives to each message is not forwarded: the proxy closes the client's connection instead, after
the broker stored the message. The producer sees a broken connection and sends again with the
same UNIQ_KEY; `orbitmq dev` has the duplicate window on, so the retry is answered, not stored.
"""

from __future__ import annotations

import asyncio
import random
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import pytest

from orbitmq.client import ConsumeFromWhere, Message, Producer, PushConsumer
from orbitmq.common import properties as mc
from orbitmq.errors import OrbitMQError
from orbitmq.remoting.codec import FrameDecoder, encode
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import props, request, send_v2
from tests.client.helpers import Collector, wait_until
from tests.support.procs import ServerProcess, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(240)

_SENDS = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)


def free_port() -> int:
    """A port below the ephemeral range (no client connection takes it while the broker restarts)
    whose neighbours are free too: the broker also binds port - 2 (VIP channel) and port + 1 (HA)."""
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(20_000, 30_000)
        try:
            for p in (port - 2, port, port + 1):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port")


def start_dev(store: Path, ns_port: int, broker_port: int, *extra: str) -> ServerProcess:
    return start_server(
        orbitmq_command("dev", "--store", str(store), "--namesrv-port", str(ns_port),
                        "--broker-port", str(broker_port), "--host", "127.0.0.1", *extra),
        listeners=2,
    )


class LosingProxy:
    """Forwards remoting frames to `upstream`; drops the first response to each message's send
    (by UNIQ_KEY, or by body for a batch) and closes that client connection instead."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.dropped: set[str] = set()
        self.server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def addr(self) -> str:
        assert self.server is not None
        return f"127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> Self:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            writer.close()
            self._tasks.discard(task)
            return
        sends: dict[int, str] = {}  # opaque -> message id of a send in flight on this connection

        async def client_to_broker() -> None:
            decoder = FrameDecoder()
            while data := await reader.read(65536):
                for cmd in decoder.feed(data):
                    if cmd.code in _SENDS and not cmd.is_response:
                        fields = cmd.ext_fields or {}
                        properties = mc.decode_properties(fields.get("i") or fields.get("properties") or "")
                        sends[cmd.opaque] = properties.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or cmd.body_bytes().hex()
                    up_writer.writelines(encode(cmd))
                await up_writer.drain()

        async def broker_to_client() -> None:
            decoder = FrameDecoder()
            while data := await up_reader.read(65536):
                for cmd in decoder.feed(data):
                    msg_id = sends.pop(cmd.opaque, None) if cmd.is_response else None
                    if msg_id is not None and msg_id not in self.dropped and cmd.code == ResponseCode.SUCCESS:
                        self.dropped.add(msg_id)  # stored, but the client never hears of it
                        return
                    writer.writelines(encode(cmd))
                await writer.drain()

        pumps = [asyncio.ensure_future(client_to_broker()), asyncio.ensure_future(broker_to_client())]
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            pass
        finally:
            for pump in pumps:
                pump.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for w in (writer, up_writer):
                w.transport.abort()
            self._tasks.discard(task)


async def stored_count(broker_addr: str, topic: str, queues: int) -> int:
    async with RemotingClient() as client:
        total = 0
        for q in range(queues):
            response = await request(client, broker_addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(q)})
            total += int(response.field("offset") or 0)
        return total


async def create_topic(broker_addr: str, topic: str, queues: int, attributes: str = "") -> None:
    fields = {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues), "writeQueueNums": str(queues),
        "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
    }
    if attributes:
        fields["attributes"] = attributes
    async with RemotingClient() as client:
        response = await request(client, broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
        assert response.code == ResponseCode.SUCCESS, response.remark


def through(producer: Producer, proxy: LosingProxy) -> None:
    """Make the producer reach its broker through the proxy (the route names the broker itself)."""

    async def find_master_addr(broker_name: str, topic: str) -> str:
        return proxy.addr

    producer.instance.find_master_addr = find_master_addr  # type: ignore[method-assign]


async def send_until_answered(producer: Producer, msg: Message) -> None:
    """The application's own retry: the same Message (same UNIQ_KEY) until a result comes back."""
    for _ in range(50):
        try:
            await producer.send(msg)
            return
        except OrbitMQError:
            await asyncio.sleep(0.1)
    raise AssertionError(f"no answer for {msg.unique_key}")


Dev = tuple[list[ServerProcess], int, int]


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[Dev]:
    """([the running `orbitmq dev`], NameServer port, broker port); a test may replace the process."""
    ns_port, broker_port = free_port(), free_port()
    holder = [start_dev(tmp_path / "data", ns_port, broker_port)]
    try:
        yield holder, ns_port, broker_port
    finally:
        holder[0].stop()


async def test_a_thousand_sends_whose_responses_are_lost_are_stored_exactly_once(dev: Dev) -> None:
    _holder, ns_port, broker_port = dev
    namesrv, broker = f"127.0.0.1:{ns_port}", f"127.0.0.1:{broker_port}"
    await create_topic(broker, "IdemLoad", 4)
    collector = Collector()
    async with LosingProxy(("127.0.0.1", broker_port)) as proxy:
        async with Producer("idem_pg", namesrv_addr=namesrv, retry_times_when_send_failed=8) as producer:
            through(producer, proxy)
            one = Message("IdemLoad", b"single")
            result = await producer.send(one)  # its first response was lost: this is the retry's answer
            assert proxy.dropped == {one.unique_key}
            assert result.offset_msg_id and result.queue_offset == 0
            messages = [Message("IdemLoad", f"m{i}".encode()) for i in range(1000)]
            limit = asyncio.Semaphore(32)

            async def send(msg: Message) -> None:
                async with limit:
                    await send_until_answered(producer, msg)

            await asyncio.gather(*(send(m) for m in messages))
        # Concurrent sends travel in the producer's natural batches: a lost answer is a whole batch's.
        assert len(proxy.dropped) > 10
    assert await stored_count(broker, "IdemLoad", 4) == 1001
    consumer = PushConsumer("idem_cg", namesrv_addr=namesrv, instance_name="idem",
                            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe("IdemLoad", "*")
    consumer.register_listener(collector)
    await consumer.start()
    try:
        await wait_until(lambda: len(collector.bodies()) >= 1001, timeout=60)
    finally:
        await consumer.shutdown()
    bodies = collector.bodies()
    assert bodies == {b"single", *(f"m{i}".encode() for i in range(1000))}


async def test_a_retry_after_a_broker_restart_is_still_answered_not_stored(dev: Dev, tmp_path: Path) -> None:
    holder, ns_port, broker_port = dev
    broker = f"127.0.0.1:{broker_port}"
    await create_topic(broker, "IdemRestart", 2)
    await create_topic(broker, "IdemOff", 2, "+duplicateDetectionWindowSeconds=0")
    uniq = "7F00000100002A9F000000000000ABCD"
    async with RemotingClient() as client:  # a 4.x-style client: the window is the broker's
        first = await send_v2(client, broker, "IdemRestart", b"x", props(UNIQ_KEY=uniq), queue_id=0)
        assert first.code == ResponseCode.SUCCESS
        for _ in range(2):
            off = await send_v2(client, broker, "IdemOff", b"x", props(UNIQ_KEY=uniq), queue_id=0)
            assert off.code == ResponseCode.SUCCESS
    holder[0].kill()  # SIGKILL: nothing saved on the way out
    holder[0] = await asyncio.to_thread(start_dev, tmp_path / "data", ns_port, broker_port)
    async with RemotingClient() as client:
        again = await send_v2(client, broker, "IdemRestart", b"x", props(UNIQ_KEY=uniq), queue_id=1)
    assert again.code == ResponseCode.SUCCESS
    fields = ("msgId", "queueId", "queueOffset")
    assert [again.field(f) for f in fields] == [first.field(f) for f in fields]
    assert await stored_count(broker, "IdemRestart", 2) == 1
    assert await stored_count(broker, "IdemOff", 2) == 2  # window off for that topic: compatibility

