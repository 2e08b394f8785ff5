"""Stopping a master with a connected slave is quiet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.ha.cluster import broker_conf, start_broker, start_namesrv
from tests.support.procs import ServerProcess, eventually

pytestmark = pytest.mark.timeout(60)

REPLICATING = re.compile(r"replicating from master \S+ at offset")


def test_a_master_with_a_connected_slave_stops_without_a_traceback(
    tmp_path: Path, procs: list[ServerProcess]
) -> None:
    """RocketMQ's HAService.shutdown closes its HAConnections (HAConnection.shutdown)
    and the broker exits without a stack trace; OrbitMQ's master must stop as quietly."""
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    master = start_broker(broker_conf(tmp_path, "master", ns.addr, "ASYNC_MASTER"))
    procs.append(master)
    slave = start_broker(broker_conf(tmp_path, "slave", ns.addr, "SLAVE"))
    procs.append(slave)
    eventually(lambda: any(REPLICATING.search(line) for line in list(slave.output)), timeout=30)

    assert master.stop(timeout=30) == 0
    output = "".join(master.output)
    assert "Traceback" not in output, output
    assert "CancelledError" not in output, output
    assert slave.stop(timeout=30) == 0
    slave_output = "".join(slave.output)
    assert "Traceback" not in slave_output, slave_output
