"""Fixtures of the failover tests: etcd and a three-replica group (tests/support/failover.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ha.cluster import start_namesrv
from tests.support.failover import Etcd, FailoverGroup, skip_without_etcd, start_etcd
from tests.support.procs import ServerProcess


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[Etcd]:
    skip_without_etcd()
    server = start_etcd(tmp_path / "etcd")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def group(request: pytest.FixtureRequest, tmp_path: Path, etcd: Etcd,
          procs: list[ServerProcess]) -> Iterator[FailoverGroup]:
    """Three replicas; parametrize indirectly with a dict of more broker.conf keys."""
    namesrv = start_namesrv(tmp_path)
    procs.append(namesrv)
    extra = dict(getattr(request, "param", {}) or {})
    replicas = FailoverGroup(tmp_path / "group", etcd.endpoint, namesrv.addr, extra=extra)
    try:
        replicas.start_all()
        yield replicas
    finally:
        replicas.stop_all()
