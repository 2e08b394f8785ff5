"""Shared fixtures: real servers on 127.0.0.1, ephemeral ports, temp folders, stopped by PID."""

from __future__ import annotations

import os
import signal
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from orbitmq.remoting.transport import RemotingClient
from tests.support.procs import ServerProcess, orbitmq_command, start_server


@pytest.fixture
def procs() -> Iterator[list[ServerProcess]]:
    """Server processes a test starts (append them); stopped by PID, newest first, and continued
    first if a test left one stopped (SIGSTOP)."""
    started: list[ServerProcess] = []
    try:
        yield started
    finally:
        for proc in reversed(started):
            if proc.popen.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
            proc.stop()


@pytest.fixture
def namesrv_process(tmp_path) -> Iterator[ServerProcess]:  # type: ignore[no-untyped-def]
    """A NameServer started by the CLI on 127.0.0.1 with an ephemeral port."""
    server = start_server(
        orbitmq_command("namesrv", "--listen", "127.0.0.1:0", "--kv-config-path", str(tmp_path / "kvConfig.json"))
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def spans() -> Iterator[Any]:
    """OrbitMQ's clients traced into the SDK's in-memory exporter (an InMemorySpanExporter) for one test."""
    pytest.importorskip("opentelemetry.sdk")
    from tests.support.otel import memory_tracing

    with memory_tracing() as exporter:
        yield exporter


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    """A remoting client of this test, closed at its end (a test module may define its own `client`)."""
    c = RemotingClient()
    try:
        yield c
    finally:
        await c.close()
