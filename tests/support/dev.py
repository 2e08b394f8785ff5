"""`orbitmq dev` (a NameServer and a broker in one child process) as every test suite starts it.

`start_dev(root, conf)` runs it on ephemeral loopback ports with its store
(and the optional broker.conf text `conf`) under `root`, waits for both
readiness lines and returns a `DevServer`; `running_dev(...)` is the same as
a context manager that stops the process by PID at the end. `unique_names`
gives each test its own topic and groups on a shared server.
`inprocess_dev(root)` runs the same pair inside the test's event loop, for
tests that wait on the servers' own state (a parked long poll, say).
"""

from __future__ import annotations

import itertools
import os
import random
import socket
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.namesrv.server import NameServer
from tests.support.procs import ServerProcess, orbitmq_command, start_server

_counter = itertools.count()


@dataclass
class DevServer:
    """A running `orbitmq dev`: its process and where its NameServer and broker listen."""

    process: ServerProcess
    namesrv: str
    broker: str
    broker_name: str

    @property
    def broker_addr(self) -> str:
        return self.broker

    @property
    def output(self) -> list[str]:
        """What the process printed so far (stdout and stderr)."""
        return self.process.output

    def stop(self) -> None:
        self.process.stop()


def steady_port() -> int:
    """A free loopback port below the kernel's ephemeral range, for a server restarted on the same port.

    A port the kernel picked (port 0) can be handed to some client's
    connection while its server is down; one below ip_local_port_range is
    never handed out that way, so a restart finds it free.
    """
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for _ in range(200):
        port = random.randint(max(1024, low - 12000), low - 1)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port below the ephemeral range")


def start_dev(
    root: Path, conf: str = "", *, namesrv_port: int = 0, broker_port: int = 0, console: str = "off",
    timeout: float = 60.0,
) -> DevServer:
    """Start `orbitmq dev` under `root` (with broker.conf text `conf`) and wait until both servers listen.

    Ports 0 are picked by the kernel; give `steady_port()`s to restart on the same ports. `console`
    is where the web console serves (`--console`): off unless a test asks for it.
    """
    root.mkdir(parents=True, exist_ok=True)
    args = ["dev", "--store", str(root / "store"), "--namesrv-port", str(namesrv_port),
            "--broker-port", str(broker_port), "--host", "127.0.0.1", "--console", console]
    if conf:
        conf_file = root / "broker.conf"
        conf_file.write_text(conf)
        args += ["-c", str(conf_file)]
    process = start_server(orbitmq_command(*args), listeners=2, timeout=timeout, cwd=str(root))
    # `orbitmq dev` announces the NameServer first, then `broker <name> listening on HOST:PORT`.
    broker_line = next(line for line in process.output if line.startswith("broker ") and " listening on " in line)
    return DevServer(process, process.addresses[0], process.addresses[1], broker_line.split()[1])


@contextmanager
def running_dev(root: Path, conf: str = "") -> Iterator[DevServer]:
    dev = start_dev(root, conf)
    try:
        yield dev
    finally:
        dev.stop()


def session_dev_fixtures(conf: str = "", prefix: str = "") -> tuple[Any, Any, Any]:
    """The fixtures of a suite that shares one `orbitmq dev` per session: `dev_server`, `namesrv`, `names`.

    A suite's conftest binds them to those names: `dev_server, namesrv, names = session_dev_fixtures(...)`.
    `conf` is the server's broker.conf text; `prefix` starts the suite's topic and group names.
    """

    @pytest.fixture(scope="session")
    def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
        with running_dev(tmp_path_factory.mktemp("orbitmq-dev"), conf) as dev:
            yield dev

    @pytest.fixture
    def namesrv(dev_server: DevServer) -> str:
        """The NameServer address of the shared dev server."""
        return dev_server.namesrv

    @pytest.fixture
    def names() -> tuple[str, str, str]:
        """(topic, producer group, consumer group) unique to this test."""
        return unique_names(prefix)

    return dev_server, namesrv, names


def unique_names(prefix: str = "") -> tuple[str, str, str]:
    """(topic, producer group, consumer group), never used before in this test session."""
    n = f"{os.getpid()}_{next(_counter)}"
    return f"{prefix}T_{n}", f"{prefix}PG_{n}", f"{prefix}CG_{n}"


def broker_config(tmp_path: Path, **extra: str) -> BrokerConfig:
    """An in-process broker's config: 127.0.0.1, an ephemeral port, its store under `tmp_path`, small files."""
    values = {
        "listenHost": "127.0.0.1",
        "listenPort": "0",
        "brokerIP1": "127.0.0.1",
        "storePathRootDir": str(tmp_path / "store"),
        "mappedFileSizeCommitLog": str(1 << 20),
        "mappedFileSizeConsumeQueue": str(20 * 1000),
    }
    values.update(extra)
    return BrokerConfig.from_properties(values)


@dataclass
class InProcessDev:
    """A NameServer and a broker running in the test's own event loop (so a test can watch their state)."""

    namesrv_server: NameServer
    broker_server: Broker
    namesrv: str

    @property
    def broker(self) -> str:
        return self.broker_server.broker_addr


@asynccontextmanager
async def inprocess_dev(root: Path, **broker_conf: str) -> AsyncIterator[InProcessDev]:
    """What `orbitmq dev` runs, in this event loop: a NameServer, then a broker registered with it."""
    ns = NameServer(NamesrvConfig(listen_host="127.0.0.1", listen_port=0, kv_config_path=str(root / "kv.json")))
    host, port = await ns.start()
    try:
        config = broker_config(root, namesrvAddr=f"{host}:{port}", **broker_conf)
        async with Broker(config) as broker:
            yield InProcessDev(ns, broker, f"{host}:{port}")
    finally:
        await ns.close()
