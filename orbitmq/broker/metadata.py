"""The broker's JSON metadata files: topics.json, subscriptionGroup.json, consumerOffset.json.

Each file is written atomically with a `.bak` (store/config_file.py) in
fastjson's pretty form, so RocketMQ tools and a RocketMQ broker read them.
Writes are asked for with `mark(...)` and coalesced: one writer task per file
serializes the table on the event loop (the tables belong to it) and does
the blocking write and fsync in a worker thread; a change made while a write
runs schedules one more write, so the file always ends with the newest state.
`MetadataFiles` owns those tasks: `close()` writes what is pending and waits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from orbitmq.broker.diskstate import WriteHealth
from orbitmq.common import jsonbody
from orbitmq.store.config_file import load_with_backup, write_atomically
from orbitmq.store.paths import store_path

log = logging.getLogger("orbitmq.broker")

TOPICS = "topics.json"
GROUPS = "subscriptionGroup.json"
OFFSETS = "consumerOffset.json"


class JsonTable(Protocol):
    def to_json(self) -> dict[str, Any]: ...

    def load_json(self, obj: Any) -> None: ...


class _FileWriter:
    def __init__(self, path: str, table: JsonTable, after_write: Callable[[], None] | None) -> None:
        self.path = path
        self.table = table
        self.after_write = after_write
        self.dirty = False
        self.health = WriteHealth(path)
        self.task: asyncio.Task[None] | None = None

    def mark(self) -> None:
        self.dirty = True
        if self.task is None or self.task.done():
            self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while self.dirty:
            self.dirty = False
            data = jsonbody.dumps_pretty(self.table.to_json())
            try:
                await asyncio.to_thread(write_atomically, self.path, data)
            except OSError as exc:
                self.health.failed(exc)  # logged once until a write succeeds again
                return
            self.health.succeeded()
            if self.after_write is not None:
                self.after_write()

    def write_now(self) -> None:
        """Blocking write of the current state (shutdown, after tasks are done)."""
        write_atomically(self.path, jsonbody.dumps_pretty(self.table.to_json()))
        self.dirty = False


class MetadataFiles:
    """Loads and saves the three tables under `<store root>/config/`."""

    def __init__(self, config_dir: str, *, topics: JsonTable, groups: JsonTable, offsets: JsonTable) -> None:
        self.config_dir = config_dir
        self._writers = {
            TOPICS: _FileWriter(store_path(config_dir, TOPICS), topics, None),
            GROUPS: _FileWriter(store_path(config_dir, GROUPS), groups, None),
            OFFSETS: _FileWriter(store_path(config_dir, OFFSETS), offsets, None),
        }

    def path(self, name: str) -> str:
        return self._writers[name].path

    def load(self) -> list[str]:
        """Load every file that exists (falling back to its .bak); the names loaded.

        A file and its .bak both unreadable raise ValueError: a broker must not
        start with silently emptied metadata.
        """
        loaded = []
        for name, writer in self._writers.items():
            try:
                obj = load_with_backup(writer.path, jsonbody.loads)
            except ValueError as exc:
                raise ValueError(f"{writer.path} and its .bak are unreadable: {exc}") from exc
            if obj is not None:
                if not isinstance(obj, dict):
                    raise ValueError(f"{writer.path} does not hold a JSON object")
                writer.table.load_json(obj)
                loaded.append(name)
        return loaded

    def mark(self, name: str) -> None:
        """Schedule a write of one file (coalesced with any pending one)."""
        self._writers[name].mark()

    async def flush(self) -> None:
        """Wait for pending writes."""
        tasks = [w.task for w in self._writers.values() if w.task is not None and not w.task.done()]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        """Finish pending writes, then write every table once more so the files hold the final state."""
        await self.flush()
        for writer in self._writers.values():
            await asyncio.to_thread(writer.write_now)
