"""The master's HA port spoken to directly, as a RocketMQ slave would speak it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.broker.ha.protocol import TransferDecoder, encode_report
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import send_v1
from tests.ha.cluster import broker_conf, commit_log, start_broker, start_namesrv
from tests.support.procs import ServerProcess

pytestmark = pytest.mark.timeout(60)

HA_PORT = re.compile(r"HA service on port (\d+)")


@pytest.fixture
def master(tmp_path: Path) -> Iterator[ServerProcess]:
    ns = start_namesrv(tmp_path)
    broker = start_broker(broker_conf(tmp_path, "master", ns.addr, "ASYNC_MASTER"))
    try:
        yield broker
    finally:
        broker.stop()
        ns.stop()


def _ha_port(master: ServerProcess) -> int:
    for line in master.output:
        m = HA_PORT.search(line)
        if m:
            return int(m.group(1))
    raise AssertionError("the master did not log its HA port:\n" + "".join(master.output))


async def test_the_master_streams_its_commit_log_from_offset_zero_to_a_new_slave(
    tmp_path: Path, master: ServerProcess, client: RemotingClient
) -> None:
    for i in range(30):
        assert (await send_v1(client, master.addr, "WireTopic", b"body %d" % i)).code == ResponseCode.SUCCESS
    expected = commit_log(tmp_path, "master").rstrip(b"\0")
    reader, writer = await asyncio.open_connection("127.0.0.1", _ha_port(master))
    try:
        writer.write(encode_report(0))
        decoder = TransferDecoder(1 << 20)
        received = bytearray()
        async with asyncio.timeout(10):
            while len(received) < len(expected):
                for frame in decoder.feed(await reader.read(65536)):
                    assert frame.offset == len(received), "frames continue each other without gaps"
                    assert len(frame.data) <= 32 * 1024
                    received += frame.data
        assert bytes(received) == expected
    finally:
        writer.close()


async def test_an_ack_past_the_masters_end_closes_that_connection_and_nothing_else(
    master: ServerProcess, client: RemotingClient
) -> None:
    assert (await send_v1(client, master.addr, "WireTopic", b"one")).code == ResponseCode.SUCCESS
    reader, writer = await asyncio.open_connection("127.0.0.1", _ha_port(master))
    try:
        writer.write(encode_report(0))
        await reader.read(65536)
        writer.write(encode_report(1 << 40))
        async with asyncio.timeout(10):
            while await reader.read(65536):
                pass  # frames sent before the bad ack was read; then end of stream
    finally:
        writer.close()
    assert (await send_v1(client, master.addr, "WireTopic", b"two")).code == ResponseCode.SUCCESS
