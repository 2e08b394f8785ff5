"""One `orbitmq dev` process for the end-to-end feature tests, with a short delay table and SQL92 on.

Tests share the server but never names (see `names`).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest

from tests.broker_features.inproc import SHORT_LEVELS
from tests.support.procs import ServerProcess, orbitmq_command, start_server

_counter = itertools.count()


@pytest.fixture(scope="session")
def feature_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    root = tmp_path_factory.mktemp("features-dev")
    conf = root / "broker.conf"
    # Small files: CommitLog files are reserved whole when created, and pytest keeps the last runs' folders.
    conf.write_text(
        f"messageDelayLevel={SHORT_LEVELS}\nenablePropertyFilter=true\n"
        "mappedFileSizeCommitLog=16777216\nmappedFileSizeConsumeQueue=120000\n"
    )
    server = start_server(
        orbitmq_command("dev", "--store", str(root / "data"), "--namesrv-port", "0", "--broker-port", "0",
                        "--host", "127.0.0.1", "-c", str(conf)),
        listeners=2,
    )
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def namesrv(feature_dev: ServerProcess) -> str:
    return feature_dev.addresses[0]


@pytest.fixture
def names() -> tuple[str, str, str]:
    """(topic, producer group, consumer group) unique to this test."""
    n = f"{os.getpid()}_{next(_counter)}"
    return f"FT_{n}", f"FPG_{n}", f"FCG_{n}"
