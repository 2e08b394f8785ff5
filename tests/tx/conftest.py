"""Fixtures for the transaction, request-reply, trace and example tests: one real `orbitmq dev`.

The broker checks transactions every half second and a half message after
one second, so the check paths run in test time; the trace topic exists
(traceTopicEnable) and the delay table is short for the order-timeout example.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.procs import ServerProcess, orbitmq_command, start_server

_counter = itertools.count()

BROKER_CONF = """\
transactionCheckInterval=500
transactionTimeOut=1000
transactionCheckMax=3
traceTopicEnable=true
messageDelayLevel=1s 2s 3s
"""


def start_dev(store: Path, conf: str = BROKER_CONF) -> ServerProcess:
    store.mkdir(parents=True, exist_ok=True)
    conf_file = store / "broker.conf"
    conf_file.write_text(conf)
    return start_server(
        orbitmq_command("dev", "--store", str(store), "--namesrv-port", "0", "--broker-port", "0",
                        "--host", "127.0.0.1", "-c", str(conf_file)),
        listeners=2,
    )


@pytest.fixture(scope="session")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    server = start_dev(tmp_path_factory.mktemp("orbitmq-tx"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def namesrv(dev_server: ServerProcess) -> str:
    return dev_server.addresses[0]


@pytest.fixture
def names() -> tuple[str, str, str]:
    """(topic, producer group, consumer group) unique to this test."""
    n = f"{os.getpid()}_{next(_counter)}"
    return f"TX_{n}", f"TXPG_{n}", f"TXCG_{n}"
