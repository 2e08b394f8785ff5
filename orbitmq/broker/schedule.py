"""Delay levels: messages that wait in SCHEDULE_TOPIC_XXXX until their level's delay is over.

A send carrying `DELAY=N` (N > 0) is rewritten before it is stored
(`rewrite_delayed`): topic SCHEDULE_TOPIC_XXXX, queue N-1 (levels above the
table's size use the last level), the real topic and queue kept in
REAL_TOPIC/REAL_QID, and the ConsumeQueue tag slot set to the delivery time
(§5.7). `ScheduleService` runs one delivery task per level. Every message of
one level waits the same time, so a level's queue is ordered by delivery
time and its task only ever looks at the head: it sleeps until the head is
due (or until the store dispatches a first message to an empty level), then
writes each due message back to its real topic as a new CommitLog record
(DELAY cleared, tag code recomputed from TAGS, body, flag, sysflag, born
time and host and the other properties unchanged).

Progress per level is the next queue offset to look at, kept in
`<config dir>/delayOffset.json` as RocketMQ keeps it
(`{"offsetTable":{1:5,2:0}}`, bare integer keys, atomic write with a
`.bak`). It is written every `flush_interval_ms` when it moved and at
close. A crash replays what was delivered after the last write: delivery is
at least once, never lost.

All state belongs to the event loop that ran `start()`.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence

from orbitmq.broker.diskstate import WriteHealth, is_disk_full
from orbitmq.common import jsonbody, names
from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExt, MessageExtBrokerInner
from orbitmq.common.record import decode_record
from orbitmq.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_TYPE_MASK
from orbitmq.errors import ConfigError, OrbitMQError
from orbitmq.store.api import GetMessageStatus, MessageStore, PutMessageStatus
from orbitmq.store.config_file import load_with_backup, write_atomically
from orbitmq.store.paths import store_path

log = logging.getLogger("orbitmq.broker.schedule")

DELAY_OFFSET_FILE = "delayOffset.json"
#: Messages read per round from a level's queue.
_BATCH = 32
#: Wait before trying a level again after the store refused a delivery.
_RETRY_AFTER_FAILURE_S = 1.0

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_LEVEL = re.compile(r"(\d+)([smhd])")


def parse_delay_levels(text: str) -> tuple[int, ...]:
    """`messageDelayLevel` ("1s 5s 10s 30s 1m ... 2h") as delays in ms, level 1 first.

    Units are s, m, h and d, as in RocketMQ. Raises ConfigError for an empty
    table, an entry without a known unit, or a zero delay.
    """
    levels: list[int] = []
    for part in text.split():
        m = _LEVEL.fullmatch(part.strip().lower())
        if m is None:
            raise ConfigError(f"messageDelayLevel entry {part!r} is not a number followed by s, m, h or d")
        delay = int(m.group(1)) * _UNIT_MS[m.group(2)]
        if delay <= 0:
            raise ConfigError(f"messageDelayLevel entry {part!r} must be a positive delay")
        levels.append(delay)
    if not levels:
        raise ConfigError("messageDelayLevel must name at least one delay")
    return tuple(levels)


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def is_delayable(sys_flag: int) -> bool:
    """Plain and committed messages may wait; prepared and rollback records never do."""
    return sys_flag & TRANSACTION_TYPE_MASK in (TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE)


def delay_level_of(properties: Mapping[str, str]) -> int:
    """The DELAY property as an int; 0 when absent or not a number (Java ignores those too)."""
    raw = properties.get(mc.DELAY_TIME_LEVEL)
    if not raw:
        return 0
    try:
        return int(raw)
    except ValueError:
        return 0


def rewrite_delayed(msg: MessageExtBrokerInner, levels_ms: Sequence[int], now_ms: int) -> bool:
    """Send `msg` to the schedule topic when it carries a delay level. Returns True if rewritten.

    Prepared and rollback transaction records keep no delay (their DELAY is
    dropped); messages to a dead-letter topic never wait either. The caller
    refreshes `properties_string` afterwards.
    """
    level = delay_level_of(msg.properties)
    if level <= 0:
        return False
    if not is_delayable(msg.sys_flag) or names.is_dlq_topic(msg.topic):
        msg.properties.pop(mc.DELAY_TIME_LEVEL, None)
        return False
    level = min(level, len(levels_ms))
    msg.properties[mc.DELAY_TIME_LEVEL] = str(level)
    msg.properties[mc.REAL_TOPIC] = msg.topic
    msg.properties[mc.REAL_QUEUE_ID] = str(msg.queue_id)
    msg.topic = names.SCHEDULE_TOPIC
    msg.queue_id = level - 1
    # The tag slot holds the delivery time (§5.7). The store stamps the record a
    # moment later, so this is at most that moment early; delivery itself uses
    # the record's store time, which recovery also uses to rebuild the slot.
    msg.tags_code = now_ms + levels_ms[level - 1]
    return True


def restored_message(stored: MessageExt, store_host: str) -> MessageExtBrokerInner:
    """The record to write back to the real topic of a delayed (or timed) message."""
    props = dict(stored.properties)
    topic = props.get(mc.REAL_TOPIC, "")
    try:
        queue_id = int(props.get(mc.REAL_QUEUE_ID, "0"))
    except ValueError:
        queue_id = 0
    props.pop(mc.DELAY_TIME_LEVEL, None)
    msg = MessageExtBrokerInner(
        topic=topic,
        body=stored.body,
        flag=stored.flag,
        properties=props,
        queue_id=queue_id,
        sys_flag=stored.sys_flag,
        born_timestamp=stored.born_timestamp,
        born_host=stored.born_host,
        store_host=store_host or stored.store_host,
        reconsume_times=stored.reconsume_times,
        tags_code=tag_hash_code(props.get(mc.TAGS)),
    )
    msg.refresh_properties_string()
    return msg


class DelayOffsetTable:
    """Next queue offset to deliver per level, and its file (delayOffset.json)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.offsets: dict[int, int] = {}

    def load(self) -> None:
        """Read the file (or its .bak). Raises ConfigError when both exist and are unreadable."""
        try:
            obj = load_with_backup(self.path, jsonbody.loads)
        except ValueError as exc:
            raise ConfigError(f"{self.path} and its .bak are unreadable: {exc}") from exc
        if obj is None:
            return
        table = obj.get("offsetTable") if isinstance(obj, dict) else None
        if not isinstance(table, dict):
            raise ConfigError(f"{self.path} has no offsetTable object")
        try:
            self.offsets = {int(k): int(v) for k, v in jsonbody.int_keys(table).items()}
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{self.path}: offsetTable holds a non-numeric entry") from exc

    def to_text(self) -> bytes:
        return jsonbody.dumps_pretty({"offsetTable": dict(sorted(self.offsets.items()))})

    def save(self, text: bytes) -> None:
        """Blocking atomic write (run it in a worker thread)."""
        write_atomically(self.path, text)


class ScheduleService:
    """Delivers delayed messages when their level's delay is over (see the module docstring).

    `start()` loads delayOffset.json and starts one task per level; `close()`
    stops them and writes the file. `notify` is a store dispatch listener.
    """

    def __init__(
        self,
        store: MessageStore,
        levels_ms: Sequence[int],
        config_dir: str,
        store_host: Callable[[], str],
        *,
        flush_interval_ms: int = 10_000,
        clock_ms: Callable[[], int] = _wall_clock_ms,
    ) -> None:
        self.store = store
        self.levels_ms = tuple(levels_ms)
        self.table = DelayOffsetTable(store_path(config_dir, DELAY_OFFSET_FILE))
        #: Whether delay offset writes fail (full disk): logged once per change of state.
        self.offsets_health = WriteHealth(self.table.path)
        self.delivery_health = WriteHealth("delayed message delivery")
        self.store_host = store_host
        self.flush_interval_ms = flush_interval_ms
        self.clock_ms = clock_ms
        self._wakeups = [asyncio.Event() for _ in self.levels_ms]
        #: Per level: its task found the queue drained and waits for a new message. A level
        #: waiting for its head to be due ignores arrivals (they are due even later).
        self._idle = [False for _ in self.levels_ms]
        self._tasks: list[asyncio.Task[None]] = []
        self._written: bytes = b""
        self._started = False
        self._writing: asyncio.Future[None] | None = None

    @property
    def offsets(self) -> dict[int, int]:
        """Level -> next queue offset of its schedule queue (live view)."""
        return self.table.offsets

    def rewrite(self, msg: MessageExtBrokerInner) -> bool:
        """`rewrite_delayed` with this broker's level table."""
        return rewrite_delayed(msg, self.levels_ms, self.clock_ms())

    def notify(self, topic: str, queue_id: int, max_offset: int) -> None:
        """Store dispatch listener: wake the level whose queue just got a message."""
        if topic == names.SCHEDULE_TOPIC and 0 <= queue_id < len(self._wakeups) and self._idle[queue_id]:
            self._wakeups[queue_id].set()

    async def start(self) -> None:
        self.table.load()
        for level in range(1, len(self.levels_ms) + 1):
            self.table.offsets.setdefault(level, 0)
        self._written = self.table.to_text()
        self._started = True
        self._tasks = [asyncio.ensure_future(self._deliver_level(level)) for level in range(1, len(self.levels_ms) + 1)]
        self._tasks.append(asyncio.ensure_future(self._flush_loop()))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self._started:  # never overwrite the file with a table that was not loaded
            await self._flush()

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval_ms / 1000)
            try:
                await self._flush()
            except OSError as exc:  # a full or broken disk must not stop delivery; the next round retries
                self.offsets_health.failed(exc)
            else:
                self.offsets_health.succeeded()

    async def _flush(self) -> None:
        # One write at a time: a write left running by a cancelled flush task is
        # awaited before the next starts, so two never race on the .tmp file.
        if self._writing is not None:
            await asyncio.gather(self._writing, return_exceptions=True)
        text = self.table.to_text()
        if text != self._written:
            self._writing = asyncio.ensure_future(asyncio.to_thread(self.table.save, text))
            await asyncio.shield(self._writing)
            self._written = text

    async def _deliver_level(self, level: int) -> None:
        wakeup = self._wakeups[level - 1]
        while True:
            wakeup.clear()
            try:
                wait_ms = await self._deliver_due(level)
            except Exception as exc:  # a bad record or a store error must not end this level's deliveries
                if is_disk_full(exc):
                    self.delivery_health.failed(exc)  # logged once, not every retry
                else:
                    log.exception("delay level %d: delivery failed; trying again", level)
                wait_ms = int(_RETRY_AFTER_FAILURE_S * 1000)
            if wait_ms is None:
                self._idle[level - 1] = True
                # A message dispatched between the read and now was missed by `notify`: look again.
                if self.store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, level - 1) <= self.table.offsets[level]:
                    await wakeup.wait()
                self._idle[level - 1] = False
            elif wait_ms > 0:
                try:
                    await asyncio.wait_for(wakeup.wait(), wait_ms / 1000)
                except TimeoutError:
                    pass

    async def _deliver_due(self, level: int) -> int | None:
        """Deliver this level's due messages. Returns ms until the head is due, None when empty."""
        delay_ms = self.levels_ms[level - 1]
        queue_id = level - 1
        while True:
            offset = self.table.offsets.get(level, 0)
            result = self.store.get_message(
                names.SCHEDULE_CONSUMER_GROUP, names.SCHEDULE_TOPIC, queue_id, offset, _BATCH
            )
            try:
                if result.status is not GetMessageStatus.FOUND:
                    return self._after_empty_read(level, offset, result.status, result.next_begin_offset)
                due: list[tuple[int, MessageExt | None]] = []
                wait_ms: int | None = None
                now = self.clock_ms()
                for buf, queue_offset in zip(result.buffers, result.queue_offsets):
                    try:
                        stored = decode_record(buf, decompress=False)
                    except OrbitMQError:
                        log.error("delay level %d: unreadable record at queue offset %d skipped", level, queue_offset)
                        due.append((queue_offset, None))
                        continue
                    deliver_at = stored.store_timestamp + delay_ms
                    if deliver_at > now:
                        wait_ms = deliver_at - now
                        break
                    due.append((queue_offset, stored))
                next_offset = result.next_begin_offset if wait_ms is None else None
            finally:
                result.release()
            delivered = await self._put_back([m for _, m in due])
            if delivered < len(due):
                self.table.offsets[level] = due[delivered][0]
                return int(_RETRY_AFTER_FAILURE_S * 1000)
            if due:
                self.table.offsets[level] = due[-1][0] + 1
            if wait_ms is not None:
                return wait_ms
            if next_offset is not None and next_offset > self.table.offsets[level]:
                # Entries skipped by the store (blank or cleaned away) are gone for good.
                self.table.offsets[level] = next_offset

    def _after_empty_read(self, level: int, offset: int, status: GetMessageStatus, next_begin: int) -> int | None:
        if status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_FOUND_NULL,
                      GetMessageStatus.NO_MATCHED_MESSAGE, GetMessageStatus.MESSAGE_WAS_REMOVING):
            if next_begin != offset:
                self.table.offsets[level] = next_begin
                return 0
            return int(_RETRY_AFTER_FAILURE_S * 1000)
        if status is GetMessageStatus.OFFSET_OVERFLOW_BADLY:
            # The queue is shorter than our progress (its files were removed): start at its end.
            self.table.offsets[level] = self.store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, level - 1)
        return None

    async def _put_back(self, due: list[MessageExt | None]) -> int:
        """Write due messages to their real topics, in order. Returns how many are done with.

        A message the store refuses for good (no real topic, illegal) is logged and
        skipped rather than blocking its level forever; any other refusal stops
        the round so the message is tried again.
        """
        if not due:
            return 0
        host = self.store_host()
        msgs = [restored_message(m, host) if m is not None else None for m in due]
        # put_message appends before its first await, so gathering keeps the append order
        # while letting the flushes (SYNC_FLUSH) of one round overlap.
        results = await asyncio.gather(*(self._put(m) for m in msgs))
        for i, status in enumerate(results):
            if status is not None and status not in _PERMANENT:
                log.warning("delayed message %d of the round not delivered yet: %s", i, status.value)
                return i
        return len(results)

    async def _put(self, msg: MessageExtBrokerInner | None) -> PutMessageStatus | None:
        """Store one message; None when stored or skipped, else the refusal (permanent ones are logged)."""
        if msg is None:
            return None
        if not msg.topic:
            log.error("delayed message without %s dropped", mc.REAL_TOPIC)
            return PutMessageStatus.MESSAGE_ILLEGAL
        result = await self.store.put_message(msg)
        if result.is_ok:
            if self.delivery_health.failing:
                self.delivery_health.succeeded()
            return None
        if result.status in _PERMANENT:
            log.error("delayed message to %s dropped: %s %s", msg.topic, result.status.value, result.remark)
        return result.status


#: Refusals that will not change on a second try.
_PERMANENT = frozenset({PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED})
