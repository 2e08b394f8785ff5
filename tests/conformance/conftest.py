"""One real `orbitmq dev` (NameServer + broker) per test module, stopped by PID.

Transactions are checked every half second and a half message after one, so
the broker's CHECK_TRANSACTION_STATE arrives in test time; SQL92 filtering is
enabled so a Java consumer's CHECK_CLIENT_CONFIG and SQL92 pulls can be replayed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.support.procs import ServerProcess, orbitmq_command, start_server

BROKER_CONF = "transactionCheckInterval=500\ntransactionTimeOut=1000\nenablePropertyFilter=true\n"


@dataclass(frozen=True)
class Dev:
    namesrv: str
    broker: str
    process: ServerProcess


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dev]:
    store = tmp_path_factory.mktemp("conformance")
    conf = store / "broker.conf"
    conf.write_text(BROKER_CONF)
    server = start_server(
        orbitmq_command("dev", "--store", str(store), "--namesrv-port", "0", "--broker-port", "0",
                        "--host", "127.0.0.1", "-c", str(conf)),
        listeners=2,
    )
    try:
        namesrv = next(a for a, line in zip(server.addresses, _ready_lines(server)) if line.startswith("namesrv"))
        broker = next(a for a in server.addresses if a != namesrv)
        yield Dev(namesrv, broker, server)
    finally:
        server.stop()


def _ready_lines(server: ServerProcess) -> list[str]:
    return [line for line in server.output if " listening on " in line and not line[:4].isdigit()]
