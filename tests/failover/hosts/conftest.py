"""Fixtures of the multi-host tests (each host a network namespace): the network, with a client host, and a cluster on it."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import netns
from tests.support.nscluster import Cluster, start_etcd, start_replica

#: The controller-mode group of the failover scenarios: three replicas, each on its own host.
REPLICAS = ("r0", "r1", "r2")
GROUP = "broker-fo"


@pytest.fixture
def net() -> Iterator[netns.Network]:
    reason = netns.skip_reason()
    if reason is not None:
        pytest.skip(reason)
    with netns.Network() as network:
        network.add_host("client")
        yield network


@pytest.fixture
def cluster(net: netns.Network, tmp_path: Path) -> Iterator[Cluster]:
    c = Cluster(net, tmp_path)
    try:
        c.start_namesrv()
        yield c
    finally:
        c.close()


@pytest.fixture
def group(net: netns.Network, cluster: Cluster) -> Iterator[Cluster]:
    """etcd, the NameServer and three controller-mode replicas (docs/failover.md), each on its host."""
    if importlib.util.find_spec("orbitmq.failover") is None:
        pytest.skip("controller mode (orbitmq.failover, docs/failover.md) is not in this build")
    if shutil.which("etcd") is None:
        pytest.skip("etcd is not installed (Debian's etcd-server; ./run installs it)")
    pytest.importorskip("aetcd", reason="aetcd is not installed (the failover extra)")
    start_etcd(cluster)
    for host in REPLICAS:
        start_replica(cluster, host, GROUP)
    yield cluster
