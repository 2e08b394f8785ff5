"""One `orbitmq dev` per test module keeps the admin suite inside its time budget."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.dev import DevServer, running_dev


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev(tmp_path_factory.mktemp("dev")) as cluster:
        yield cluster
