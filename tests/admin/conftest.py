"""One `orbitmq dev` per test module keeps the admin suite inside its time budget."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.admin.devcluster import DevCluster, start_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    cluster = start_dev(tmp_path_factory.mktemp("dev"))
    try:
        yield cluster
    finally:
        cluster.stop()
