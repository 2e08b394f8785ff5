"""The order-timeout example end to end: its two scripts against `orbitmq dev` with a short delay table."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

import pytest

from orbitmq.client import Producer
from tests.client.helpers import create_topic

pytestmark = pytest.mark.timeout(60)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "order_timeout"


async def script(name: str, *args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE / name), *args, cwd=str(EXAMPLE),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def read_until(stream: asyncio.StreamReader, wanted: set[str], seen: list[str]) -> None:
    while not wanted <= set(seen):
        line = await stream.readline()
        if not line:
            raise AssertionError(f"the closer exited; it printed {seen}")
        seen.append(line.decode().strip())


async def test_unpaid_order_is_closed_when_its_timeout_arrives_and_a_paid_one_is_left_alone(
    namesrv: str, tmp_path: Path
) -> None:
    db = str(tmp_path / "orders.db")
    async with Producer("order_timeout_setup", namesrv_addr=namesrv) as producer:
        await create_topic(producer, "order_timeout", queues=2)
    closer = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE / "order_closer.py"), "--db", db, "--namesrv", namesrv, cwd=str(EXAMPLE),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    seen: list[str] = []
    try:
        assert closer.stdout is not None
        await asyncio.wait_for(read_until(closer.stdout, {"closing unpaid orders from order_timeout"}, seen), 30)
        for order in ("ORDER-1", "ORDER-2"):
            # Level 2 waits 2 s in the test broker's table ("1s 2s 3s").
            code, out = await script("order_service.py", "--db", db, "--namesrv", namesrv, "create", order,
                                     "--amount", "9.90", "--delay-level", "2")
            assert code == 0, out
            assert f"created {order} (9.90)" in out
        code, out = await script("order_service.py", "--db", db, "pay", "ORDER-2")
        assert (code, out.strip()) == (0, "paid ORDER-2")
        await asyncio.wait_for(read_until(closer.stdout, {"closed ORDER-1", "ORDER-2 was paid; left alone"}, seen),
                               30)
    finally:
        if closer.returncode is None:
            os.kill(closer.pid, signal.SIGTERM)
            await asyncio.wait_for(closer.wait(), 15)
    code, out = await script("order_service.py", "--db", db, "list")
    assert out.split("\n")[:2] == ["ORDER-1\t9.90\tCLOSED", "ORDER-2\t9.90\tPAID"]
    code, out = await script("order_service.py", "--db", db, "pay", "ORDER-1")
    assert code == 1 and "ORDER-1 is closed; payment refused" in out
    assert seen.count("closed ORDER-1") == 1
