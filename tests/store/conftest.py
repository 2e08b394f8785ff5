"""Fixtures for store tests: a started store on a temp folder with tiny files.

`store` and `make_store` run each test over every `MessageStore` implementation (the file
store and the in-memory one), as nats-server's store tests run over file and memory
stores: the suite specifies the protocol, not one class. `file_store` is for what only
the file store has (mapped files, a folder lock, crash recovery).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from orbitmq.store.api import MessageStore
from orbitmq.store.config import StoreConfig
from orbitmq.store.memory import MemoryMessageStore
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import FakeClock, small_config

#: `make_store(config, clock_ms=None)` -> a store, not started.
StoreFactory = Callable[..., MessageStore]


def _file(config: StoreConfig, clock_ms: Callable[[], int] | None = None) -> MessageStore:
    return DefaultMessageStore(config) if clock_ms is None else DefaultMessageStore(config, clock_ms=clock_ms)


def _memory(config: StoreConfig, clock_ms: Callable[[], int] | None = None) -> MessageStore:
    return MemoryMessageStore(config) if clock_ms is None else MemoryMessageStore(config, clock_ms=clock_ms)


@pytest.fixture(params=["file", "memory"])
def make_store(request: pytest.FixtureRequest) -> StoreFactory:
    return _file if request.param == "file" else _memory


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def store(tmp_path: Path, clock: FakeClock, make_store: StoreFactory) -> AsyncIterator[MessageStore]:
    s = make_store(small_config(tmp_path), clock_ms=clock)
    await s.start()
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
async def file_store(tmp_path: Path, clock: FakeClock) -> AsyncIterator[DefaultMessageStore]:
    s = DefaultMessageStore(small_config(tmp_path), clock_ms=clock)
    await s.start()
    try:
        yield s
    finally:
        await s.close()
