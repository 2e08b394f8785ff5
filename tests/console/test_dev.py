"""`orbitmq dev --console`: off, or a taken port, leaves the NameServer and broker running without it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.console.conftest import CONSOLE_LINE
from tests.support.procs import eventually, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(60)


def _dev(tmp_path: Path, console: str) -> list[str]:
    server = start_server(
        orbitmq_command("dev", "--store", str(tmp_path / "data"), "--namesrv-port", "0", "--broker-port", "0",
                        "--console", console),
        listeners=2,
    )
    try:
        if console != "off":
            eventually(lambda: any("console" in line for line in server.output), timeout=20)
        assert server.stop() == 0
        return list(server.output)
    finally:
        server.stop()


def test_console_off_serves_no_console(tmp_path: Path) -> None:
    lines = _dev(tmp_path, "off")
    assert not any(CONSOLE_LINE.match(line) for line in lines)


def test_a_taken_console_port_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        lines = _dev(tmp_path, f"127.0.0.1:{port}")
    assert any(line.startswith(f"warning: console not started on 127.0.0.1:{port}") for line in lines)
    assert not any(CONSOLE_LINE.match(line) for line in lines)


def test_a_malformed_console_address_exits_2(tmp_path: Path) -> None:
    import subprocess

    done = subprocess.run(
        orbitmq_command("dev", "--store", str(tmp_path / "data"), "--namesrv-port", "0", "--broker-port", "0",
                        "--console", "nonsense"),
        check=False, capture_output=True, timeout=30,
    )
    assert done.returncode == 2
    assert b"HOST:PORT" in done.stderr
    assert b"listening" not in done.stdout  # refused before any server started
