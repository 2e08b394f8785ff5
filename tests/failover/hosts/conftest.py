"""Fixtures of the multi-host tests (each host a network namespace): the network, with a client host, and a cluster on it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import netns
from tests.support.nscluster import Cluster


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
