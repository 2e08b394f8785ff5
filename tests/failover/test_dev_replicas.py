"""`orbitmq dev --replicas 3`: etcd, a NameServer and three broker processes under one supervisor;
the first replica is master on --broker-port, and stopping the supervisor stops them all."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.support.dev import steady_port
from tests.support.failover import group_state, skip_without_etcd
from tests.support.procs import eventually, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(120)


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # connections in TIME_WAIT do not count
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_dev_replicas_runs_a_failover_group_and_stops_it(tmp_path: Path) -> None:
    skip_without_etcd()
    base = steady_port()
    while not all(_free(base + offset) for offset in (-2, 1, 8, 10, 11, 18, 20, 21)):
        base = steady_port()
    dev = start_server(orbitmq_command(
        "dev", "--replicas", "3", "--store", str(tmp_path / "data"), "--namesrv-port", "0",
        "--broker-port", str(base), "--no-metrics", "--console", "off",
    ), listeners=4, timeout=90)
    try:
        assert dev.addresses[1:] == [f"127.0.0.1:{base + 10 * i}" for i in range(3)]
        etcd = next(line.split()[-1] for line in dev.output if line.startswith("etcd serving on "))
        eventually(lambda: group_state(etcd, "DefaultCluster", "broker-a").master is not None, timeout=30)
        snap = group_state(etcd, "DefaultCluster", "broker-a")
        assert snap.master is not None and snap.master.addr == f"127.0.0.1:{base}"
        assert snap.state is not None and snap.state.master_epoch == 1
    finally:
        assert dev.stop(timeout=60) == 0
    for port in (base, base + 10, base + 20):
        assert _free(port), f"port {port} still taken after the supervisor stopped"
