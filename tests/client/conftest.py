"""Fixtures for end-to-end client tests: one real `orbitmq dev` process per test session.

Tests share the server but never names: each test uses its own topics and
groups (see `names`), so they stay independent.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.dev import DevServer, running_dev, unique_names


@pytest.fixture(scope="session")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev(tmp_path_factory.mktemp("orbitmq-dev")) as dev:
        yield dev


@pytest.fixture
def namesrv(dev_server: DevServer) -> str:
    """The NameServer address of the shared dev server."""
    return dev_server.namesrv


@pytest.fixture
def names() -> tuple[str, str, str]:
    """(topic, producer group, consumer group) unique to this test."""
    return unique_names()
