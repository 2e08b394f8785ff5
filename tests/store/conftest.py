"""Fixtures for store tests: a started DefaultMessageStore on a temp folder with tiny files."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import FakeClock, small_config


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(tmp_path: Path, clock: FakeClock) -> AsyncIterator[DefaultMessageStore]:
    s = DefaultMessageStore(small_config(tmp_path), clock_ms=clock)
    await s.start()
    try:
        yield s
    finally:
        await s.close()
