"""Fixtures for end-to-end client tests: one real `orbitmq dev` process per test session.

Tests share the server but never names: each test uses its own topics and
groups (see `names`), so they stay independent.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from tests.support.procs import ServerProcess, orbitmq_command, start_server

_counter = itertools.count()


@pytest.fixture(scope="session")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    store = tmp_path_factory.mktemp("orbitmq-dev")
    server = start_server(
        orbitmq_command("dev", "--store", str(store), "--namesrv-port", "0", "--broker-port", "0",
                        "--host", "127.0.0.1"),
        listeners=2,
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def namesrv(dev_server: ServerProcess) -> str:
    """The NameServer address of the shared dev server."""
    return dev_server.addresses[0]


@pytest.fixture
def names(request: pytest.FixtureRequest) -> tuple[str, str, str]:
    """(topic, producer group, consumer group) unique to this test."""
    n = f"{os.getpid()}_{next(_counter)}"
    return f"T_{n}", f"PG_{n}", f"CG_{n}"
