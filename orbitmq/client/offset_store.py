"""Consumer offset stores: on the broker for clustering, in a local file for broadcasting.

Both keep the offsets in memory (the offset of the next message to consume,
per queue) and persist them in the background; they differ in where they
persist and where `read_offset(..., FROM_STORE)` reads.

Offsets only move forward through `update_offset(..., increase_only=True)`,
which is what the consumers use after consumption, so a late acknowledgement
of an old batch never rewinds a queue. Seeks and resets pass False.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from orbitmq.client.queue import MessageQueue
from orbitmq.common.jsonbody import ObjectKeyMap, dumps_legacy, loads, object_key_items
from orbitmq.errors import BrokerError, QueryNotFound

log = logging.getLogger(__name__)


class ReadOffsetType(enum.Enum):
    MEMORY = "READ_FROM_MEMORY"
    STORE = "READ_FROM_STORE"
    MEMORY_FIRST_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


#: `read_offset` results that are not offsets (Java's conventions).
OFFSET_NOT_FOUND = -1
OFFSET_READ_ERROR = -2


class OffsetStore(Protocol):
    async def load(self) -> None: ...
    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None: ...
    async def read_offset(self, mq: MessageQueue, how: ReadOffsetType) -> int: ...
    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None: ...
    async def persist(self, mq: MessageQueue) -> None: ...
    def remove_offset(self, mq: MessageQueue) -> None: ...
    def offsets(self) -> dict[MessageQueue, int]: ...


class _MemoryTable:
    def __init__(self) -> None:
        self.table: dict[MessageQueue, int] = {}

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        old = self.table.get(mq)
        if old is None or not increase_only or offset > old:
            self.table[mq] = offset

    def remove_offset(self, mq: MessageQueue) -> None:
        self.table.pop(mq, None)

    def offsets(self) -> dict[MessageQueue, int]:
        return dict(self.table)


class OffsetBroker(Protocol):
    """The broker calls a remote offset store needs (provided by MQClientAPI)."""

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int: ...
    async def update_consumer_offset(self, group: str, mq: MessageQueue, offset: int, oneway: bool) -> None: ...


class RemoteOffsetStore(_MemoryTable):
    """Offsets kept on the broker (clustering): `topic@group` in consumerOffset.json."""

    def __init__(self, group: str, broker: OffsetBroker) -> None:
        super().__init__()
        self.group = group
        self.broker = broker

    async def load(self) -> None:
        """Nothing to load: offsets are read from the broker queue by queue."""

    async def read_offset(self, mq: MessageQueue, how: ReadOffsetType) -> int:
        """The stored offset; -1 when the broker has none, -2 when it cannot be asked."""
        if how is not ReadOffsetType.STORE:
            offset = self.table.get(mq)
            if offset is not None or how is ReadOffsetType.MEMORY:
                return offset if offset is not None else OFFSET_NOT_FOUND
        try:
            offset = await self.broker.query_consumer_offset(self.group, mq)
        except QueryNotFound:
            return OFFSET_NOT_FOUND
        except (BrokerError, OSError, TimeoutError) as exc:
            log.warning("cannot read the offset of %s for %s: %s", mq, self.group, exc)
            return OFFSET_READ_ERROR
        self.update_offset(mq, offset, False)
        return offset

    async def persist_all(self, mqs: Iterable[MessageQueue], oneway: bool = True) -> None:
        """Push the offsets of `mqs` (oneway by default, as the periodic job does); forget the others."""
        wanted = set(mqs)
        for mq, offset in list(self.table.items()):
            if mq in wanted:
                await self._push(mq, offset, oneway=oneway)
        for mq in list(self.table):
            if mq not in wanted:
                del self.table[mq]

    async def persist(self, mq: MessageQueue) -> None:
        offset = self.table.get(mq)
        if offset is not None:
            await self._push(mq, offset, oneway=False)

    async def _push(self, mq: MessageQueue, offset: int, oneway: bool) -> None:
        try:
            await self.broker.update_consumer_offset(self.group, mq, offset, oneway)
        except (BrokerError, OSError, TimeoutError) as exc:
            # The next periodic push retries; the broker keeps the last value it got.
            log.warning("cannot push offset %d of %s for %s: %s", offset, mq, self.group, exc)


def encode_offset_table(table: dict[MessageQueue, int]) -> str:
    """The fastjson OffsetSerializeWrapper form Java's LocalFileOffsetStore writes (queues in sorted order)."""
    entries = ObjectKeyMap((mq.to_json(), offset) for mq, offset in sorted(table.items()))
    return dumps_legacy({"offsetTable": entries}).decode("utf-8")


def decode_offset_table(text: str | bytes) -> dict[MessageQueue, int]:
    """Read an OffsetSerializeWrapper (what `encode_offset_table` or Java wrote, compact or pretty).

    Raises ValueError when the text is not such a wrapper or an entry is malformed.
    """
    obj = loads(text)
    if not isinstance(obj, dict) or "offsetTable" not in obj:
        raise ValueError("not an offset table")
    return queue_offsets(obj["offsetTable"])


def queue_offsets(value: object) -> dict[MessageQueue, int]:
    """A MessageQueue-keyed map of offsets as `jsonbody.loads` returns it. Raises ValueError when malformed."""
    if value is not None and not isinstance(value, (ObjectKeyMap, dict)):
        raise ValueError(f"an offset table is an object, not {type(value).__name__}")
    try:
        return {MessageQueue.from_json(key): int(offset) for key, offset in object_key_items(value)}
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed offset table entry: {exc}") from exc


def default_offsets_dir() -> Path:
    """RocketMQ's default: `rocketmq.client.localOffsetStoreDir` or ~/.rocketmq_offsets."""
    return Path(os.environ.get("ROCKETMQ_CLIENT_LOCAL_OFFSET_STORE_DIR", Path.home() / ".rocketmq_offsets"))


class LocalFileOffsetStore(_MemoryTable):
    """Offsets in `<dir>/<clientId>/<group>/offsets.json` (broadcasting), with a `.bak` copy.

    Writes go to a temporary file that is fsynced and renamed, so a crash
    leaves either the old or the new file, never a torn one.
    """

    def __init__(self, group: str, client_id: str, base_dir: Path | None = None) -> None:
        super().__init__()
        self.group = group
        safe_client = client_id.replace("/", "_").replace(os.sep, "_")
        self.path = (base_dir or default_offsets_dir()) / safe_client / group / "offsets.json"
        self._write_lock = asyncio.Lock()

    async def load(self) -> None:
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                text = candidate.read_text(encoding="utf-8")
            except FileNotFoundError:
                continue
            try:
                self.table.update(decode_offset_table(text))
                return
            except ValueError:
                log.warning("offset file %s is not readable; trying the backup", candidate)

    async def read_offset(self, mq: MessageQueue, how: ReadOffsetType) -> int:
        if how is not ReadOffsetType.STORE:
            offset = self.table.get(mq)
            if offset is not None or how is ReadOffsetType.MEMORY:
                return offset if offset is not None else OFFSET_NOT_FOUND
        stored = {}
        try:
            stored = decode_offset_table(self.path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            pass
        if mq in stored:
            self.update_offset(mq, stored[mq], False)
            return stored[mq]
        return OFFSET_NOT_FOUND

    async def persist_all(self, mqs: Iterable[MessageQueue]) -> None:
        wanted = set(mqs)
        table = {mq: off for mq, off in self.table.items() if mq in wanted}
        if table:
            await self._write_off_loop(table)

    async def persist(self, mq: MessageQueue) -> None:
        if mq in self.table:
            await self._write_off_loop(dict(self.table))

    async def _write_off_loop(self, table: dict[MessageQueue, int]) -> None:
        # fsync can take milliseconds; keep it off the event loop. One write at a time keeps
        # the file and its backup in order.
        async with self._write_lock:
            await asyncio.to_thread(self._write, table)

    def _write(self, table: dict[MessageQueue, int]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = encode_offset_table(table)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".bak"))
        os.replace(tmp, self.path)
