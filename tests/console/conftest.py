"""`orbitmq dev` with its console on ephemeral ports, for the console's API and browser tests."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.procs import ServerProcess, eventually, orbitmq_command, start_server

CONSOLE_LINE = re.compile(r"^console listening on (\S+):(\d+)\s*$")


@dataclass
class DevWithConsole:
    server: ServerProcess
    namesrv: str
    url: str


def console_url(server: ServerProcess) -> str:
    found: list[str] = []

    def announced() -> bool:
        for line in list(server.output):
            m = CONSOLE_LINE.match(line)
            if m:
                found.append(f"http://{m.group(1)}:{m.group(2)}")
                return True
        return False

    eventually(announced, timeout=30, message="no 'console listening on' line:\n" + "".join(server.output))
    return found[0]


def start_dev(tmp_path: Path, *extra: str) -> DevWithConsole:
    server = start_server(
        orbitmq_command("dev", "--store", str(tmp_path / "data"), "--namesrv-port", "0", "--broker-port", "0",
                        "--console", "127.0.0.1:0", *extra),
        listeners=2,
    )
    try:
        return DevWithConsole(server, server.addresses[0], console_url(server))
    except BaseException:
        server.stop()
        raise


@pytest.fixture
def dev_console(tmp_path: Path) -> Iterator[DevWithConsole]:
    dev = start_dev(tmp_path)
    try:
        yield dev
    finally:
        dev.server.stop()
