"""One `orbitmq dev` process for the end-to-end feature tests, with a short delay table and SQL92 on.

Tests share the server but never names (see `names`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.broker_features.inproc import SHORT_LEVELS
from tests.support.dev import DevServer, running_dev, unique_names

# Small files: CommitLog files are reserved whole when created, and pytest keeps the last runs' folders.
BROKER_CONF = (
    f"messageDelayLevel={SHORT_LEVELS}\nenablePropertyFilter=true\n"
    "mappedFileSizeCommitLog=16777216\nmappedFileSizeConsumeQueue=120000\n"
)


@pytest.fixture(scope="session")
def feature_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev(tmp_path_factory.mktemp("features-dev"), BROKER_CONF) as dev:
        yield dev


@pytest.fixture
def namesrv(feature_dev: DevServer) -> str:
    return feature_dev.namesrv


@pytest.fixture
def names() -> tuple[str, str, str]:
    """(topic, producer group, consumer group) unique to this test."""
    return unique_names("F")
