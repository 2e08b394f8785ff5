"""TimerService: timed messages stored on the CommitLog, delivered within a second of their time.

A send asking for a time (`props.delivery_time`) is rewritten by `rewrite` to
the internal topic rmq_sys_wheel_timer (one queue), with REAL_TOPIC/REAL_QID
and TIMER_OUT_MS recording where and when it goes; the ConsumeQueue tag slot
holds the delivery time as for the schedule topic. A time already reached
is delivered at once (the message is stored in its real topic directly).

The service's task reads new entries of that queue as the store dispatches
them into a `TimerIndex` (a heap by delivery time), sleeps until the
earliest is due, and writes due messages back to their real topics as new
CommitLog records. After each round the index's checkpoint is saved to
`<config dir>/timerCheckpoint.json` (atomically, at most every
`flush_interval_ms`); at start the index is rebuilt from the queue beginning
at the checkpoint's low offset. The persistence rule is in `index.py`: a
crash loses no timer; timers delivered after the last save are delivered
again (at least once).

All state belongs to the event loop that ran `start()`; the index is changed
only by the service's one task.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from orbitmq.broker.diskstate import WriteHealth, is_disk_full
from orbitmq.broker.schedule import is_delayable, restored_message
from orbitmq.broker.timer import props as tp
from orbitmq.broker.timer.index import TimerCheckpoint, TimerEntry, TimerIndex
from orbitmq.common import jsonbody
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.common.record import decode_record
from orbitmq.errors import ConfigError, OrbitMQError, ServiceNotAvailable
from orbitmq.store.api import GetMessageStatus, MessageStore
from orbitmq.store.config_file import load_with_backup, write_atomically
from orbitmq.store.paths import store_path

log = logging.getLogger("orbitmq.broker.timer")

CHECKPOINT_FILE = "timerCheckpoint.json"
#: Group name the service reads the timer queue under (only for the store's bookkeeping).
TIMER_GROUP = "TIMER_CONSUMER"
_LOAD_BATCH = 256
_DELIVER_BATCH = 64
_RETRY_AFTER_FAILURE_MS = 1000


#: The tag of a recall's delete marker (RocketMQ 5's).
RECALL_TAG = "_RECALL_TAG_"


@dataclass(frozen=True, slots=True)
class PendingTimer:
    topic: str
    msg_id: str
    deliver_ms: int
    queue_offset: int
    commit_log_offset: int

    def to_json(self) -> dict[str, object]:
        return {
            "topic": self.topic, "msgId": self.msg_id, "deliverMs": self.deliver_ms,
            "queueOffset": self.queue_offset, "commitLogOffset": self.commit_log_offset,
        }


class StoreRefused(ServiceNotAvailable):
    """The store refused a delete marker or a rescheduled copy."""


def _wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class TimerService:
    """See the module docstring. `notify` is a store dispatch listener."""

    def __init__(
        self,
        store: MessageStore,
        config_dir: str,
        store_host: Callable[[], str],
        *,
        max_delay_ms: int,
        roll_after_ms: int = 36 * 3_600_000,
        roll_check_interval_ms: int = 60_000,
        flush_interval_ms: int = 100,
        clock_ms: Callable[[], int] = _wall_clock_ms,
    ) -> None:
        self.store = store
        self.path = store_path(config_dir, CHECKPOINT_FILE)
        #: Whether checkpoint writes fail (full disk): logged once per change of state.
        self.checkpoint_health = WriteHealth(f"timer checkpoint {self.path}")
        self.delivery_health = WriteHealth("timer delivery")
        self.store_host = store_host
        self.max_delay_ms = max_delay_ms
        #: A timer waiting longer than this is stored again, so that CommitLog retention
        #: (fileReservedTime) never deletes the record of a pending timer.
        self.roll_after_ms = roll_after_ms
        self.roll_check_interval_ms = roll_check_interval_ms
        self._next_roll_ms = 0
        self.flush_interval_ms = flush_interval_ms
        self.clock_ms = clock_ms
        self.index = TimerIndex(TimerCheckpoint())
        self._wakeup = asyncio.Event()
        self._latest = TimerCheckpoint()
        self._saved = TimerCheckpoint()
        self._tasks: list[asyncio.Task[None]] = []
        self._writing: asyncio.Future[None] | None = None
        #: Timers cancelled by a delete marker since start (broker stats).
        self.cancelled_count = 0

    # --- send path -------------------------------------------------------------------

    def rewrite(self, msg: MessageExtBrokerInner) -> bool:
        """Route a message asking for a time. Returns True when it did (DELAY is then dropped).

        Raises `props.TimerPropertyError` for a malformed time or one beyond the
        horizon. Prepared and rollback transaction records keep no time. A delete
        marker (TIMER_DEL_UNIQKEY) always goes to the timer topic, whatever its
        time: it is read there and never delivered.
        """
        properties = msg.properties
        marker = tp.TIMER_DEL_UNIQKEY in properties
        if not marker and not tp.has_timer(properties):
            return False
        if not marker and not is_delayable(msg.sys_flag):
            tp.clear_request(properties)
            return False
        now = self.clock_ms()
        deliver = tp.delivery_time(properties, now, self.max_delay_ms)
        tp.clear_request(properties)
        properties.pop(mc.DELAY_TIME_LEVEL, None)
        if marker:
            deliver = now if deliver is None else max(deliver, now)
        assert deliver is not None
        if deliver <= now and not marker:
            return True
        properties[tp.TIMER_OUT_MS] = str(deliver)
        properties[tp.TIMER_ENQUEUE_MS] = str(now)
        properties[mc.REAL_TOPIC] = msg.topic
        properties[mc.REAL_QUEUE_ID] = str(msg.queue_id)
        msg.topic = tp.TIMER_TOPIC
        msg.queue_id = 0
        msg.tags_code = deliver
        return True

    # --- inspect, cancel, reschedule -------------------------------------------------------

    def pending(self, topic: str | None = None) -> list[PendingTimer]:
        """Timers waiting (loaded, not delivered, not cancelled), by due time; of one real topic when given."""
        out = []
        for entry in self.index.pending():
            real, _, uniq = entry.key.partition("+")
            if topic is None or real == topic:
                out.append(PendingTimer(real, uniq, entry.deliver_ms, entry.queue_offset, entry.commit_log_offset))
        return out

    def marker(self, topic: str, uniq_key: str, deliver_ms: int, store_host: str) -> MessageExtBrokerInner:
        """The delete marker cancelling timer `uniq_key` of `topic` (RocketMQ 5's form), ready to store."""
        msg = MessageExtBrokerInner(
            topic=topic, body=b"0", flag=0,
            properties={
                tp.TIMER_DEL_UNIQKEY: tp.delete_key(topic, uniq_key),
                tp.TIMER_DELIVER_MS: str(deliver_ms),
                mc.TAGS: RECALL_TAG,
            },
            queue_id=0, store_host=store_host, born_host=store_host, born_timestamp=self.clock_ms(),
        )
        self.rewrite(msg)
        msg.refresh_properties_string()
        return msg

    async def cancel(self, topic: str, uniq_key: str) -> PendingTimer | None:
        """Store a delete marker for a pending timer. None when no such timer waits.

        The marker is durable (a record of the timer topic); the timer is taken out
        of the index when the marker is read back, a moment later.
        """
        entry = self.index.find(tp.delete_key(topic, uniq_key))
        if entry is None:
            return None
        await self.put_marker(topic, uniq_key, entry.deliver_ms)
        return PendingTimer(topic, uniq_key, entry.deliver_ms, entry.queue_offset, entry.commit_log_offset)

    async def put_marker(self, topic: str, uniq_key: str, deliver_ms: int) -> None:
        """Store the delete marker for timer `uniq_key` of `topic` (RECALL_MESSAGE does only this)."""
        await self._put_checked(self.marker(topic, uniq_key, deliver_ms, self.store_host()))

    async def reschedule(self, topic: str, uniq_key: str, deliver_ms: int) -> PendingTimer | None:
        """Cancel a pending timer and store it again (same UNIQ_KEY, body and properties) due at
        `deliver_ms` (at once when that time has passed). None when no such timer waits."""
        entry = self.index.find(tp.delete_key(topic, uniq_key))
        if entry is None:
            return None
        now = self.clock_ms()
        if deliver_ms - now > self.max_delay_ms:
            raise tp.TimerPropertyError(
                f"new delivery time {deliver_ms} is more than {self.max_delay_ms // 1000}s "
                f"(timerMaxDelaySec) ahead of the broker's time {now}"
            )
        found = self.store.select_one_message_by_offset(entry.commit_log_offset)
        if found is None:
            return None
        with found:
            stored = decode_record(found.buffer, decompress=False)
        host = self.store_host()
        again = restored_message(stored, host)
        for name in (tp.TIMER_OUT_MS, tp.TIMER_ENQUEUE_MS, mc.REAL_TOPIC, mc.REAL_QUEUE_ID):
            again.properties.pop(name, None)
        again.properties[tp.TIMER_DELIVER_MS] = str(deliver_ms)
        self.rewrite(again)
        again.refresh_properties_string()
        # The marker first: it cancels only timers stored before it, so not the new copy.
        await self._put_checked(self.marker(topic, uniq_key, entry.deliver_ms, host))
        await self._put_checked(again)
        return PendingTimer(topic, uniq_key, deliver_ms, entry.queue_offset, entry.commit_log_offset)

    async def _put_checked(self, msg: MessageExtBrokerInner) -> None:
        result = await self.store.put_message(msg)
        if not result.is_ok:
            raise StoreRefused(f"timer record not stored: {result.status.value} {result.remark or ''}".strip())

    def notify(self, topic: str, queue_id: int, max_offset: int) -> None:
        if topic == tp.TIMER_TOPIC:
            self._wakeup.set()

    # --- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        """Load the checkpoint and start the task, which rebuilds the index from the timer queue
        (in batches, between other work) before it delivers anything."""
        try:
            obj = load_with_backup(self.path, jsonbody.loads)
            checkpoint = TimerCheckpoint.from_json(obj) if obj is not None else TimerCheckpoint()
        except ValueError as exc:
            raise ConfigError(f"{self.path} and its .bak are unreadable: {exc}") from exc
        self.index = TimerIndex(checkpoint)
        self._latest = self._saved = checkpoint
        self._tasks = [asyncio.ensure_future(self._run()), asyncio.ensure_future(self._save_loop())]

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self._save()

    # --- delivery --------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._wakeup.clear()
            try:
                wait_ms = await self._round()
            except Exception as exc:  # a bad record or a store error must not end timer deliveries
                if is_disk_full(exc):
                    self.delivery_health.failed(exc)  # logged once, not every retry
                else:
                    log.exception("timer delivery failed; trying again")
                wait_ms = _RETRY_AFTER_FAILURE_MS
            self._latest = self.index.checkpoint()
            if wait_ms == 0:
                await asyncio.sleep(0)  # let sends and pulls run between rounds
                continue
            try:
                await asyncio.wait_for(self._wakeup.wait(), None if wait_ms is None else wait_ms / 1000)
            except TimeoutError:
                pass

    async def _round(self) -> int | None:
        """Load, deliver what is due. Returns ms to wait (0: go on at once, None: until woken)."""
        if self._load_new():
            # Deliver only once every stored timer is indexed, so none due earlier is passed over.
            return 0
        now = self.clock_ms()
        if now >= self._next_roll_ms:
            self._next_roll_ms = now + self.roll_check_interval_ms
            if await self._roll(now - self.roll_after_ms):
                return 0
        due = self.index.pop_due(now, _DELIVER_BATCH)
        if due:
            try:
                delivered = await self._deliver(due)
            except BaseException:
                # Popped timers must be back in the index before anything else runs: a
                # checkpoint would otherwise count them as delivered.
                self.index.put_back(due)
                raise
            self.index.done(due[:delivered])
            if delivered < len(due):
                self.index.put_back(due[delivered:])
                self.index.mark_delivered_until(now)
                return _RETRY_AFTER_FAILURE_MS
        self.index.mark_delivered_until(now)
        if len(due) == _DELIVER_BATCH:
            return 0
        next_ms = self.index.next_due_ms()
        if next_ms is None:
            return None
        # Wake for the earliest timer, or for the next roll-over check if that comes first.
        return max(min(next_ms, self._next_roll_ms) - self.clock_ms(), 0)

    def _load_new(self) -> bool:
        """Index the queue's next entries; True when more are waiting to be read."""
        index = self.index
        offset = index.scan_offset
        result = self.store.get_message(TIMER_GROUP, tp.TIMER_TOPIC, 0, offset, _LOAD_BATCH)
        with result:
            if result.status is not GetMessageStatus.FOUND:
                if result.status is GetMessageStatus.OFFSET_OVERFLOW_BADLY:
                    log.error("timer queue is shorter than the checkpoint (%d); starting at its end", offset)
                    index.scan_offset = self.store.get_max_offset_in_queue(tp.TIMER_TOPIC, 0)
                elif result.next_begin_offset > offset:
                    index.scan_offset = result.next_begin_offset
                    return True
                return False
            for buf, queue_offset in zip(result.buffers, result.queue_offsets):
                try:
                    stored = decode_record(buf, with_body=False, decompress=False)
                except OrbitMQError:
                    log.error("timer queue entry %d is unreadable; skipped", queue_offset)
                    index.skip(queue_offset)
                    continue
                props = stored.properties
                deleted = props.get(tp.TIMER_DEL_UNIQKEY)
                if deleted is not None:
                    # A delete marker: never indexed nor delivered; it cancels what it names.
                    index.skip(queue_offset)
                    if index.cancel(deleted) is not None:
                        self.cancelled_count += 1
                        log.info("timer %s cancelled by a delete marker", deleted)
                    continue
                deliver = tp.stored_delivery_time(props)
                if deliver is None:
                    log.error("timer queue entry %d has no %s; skipped", queue_offset, tp.TIMER_OUT_MS)
                    index.skip(queue_offset)
                    continue
                real, uniq = props.get(mc.REAL_TOPIC), props.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                index.load(
                    TimerEntry(
                        deliver, queue_offset, stored.commit_log_offset, stored.store_size, stored.store_timestamp,
                        tp.delete_key(real, uniq) if real and uniq else "",
                    )
                )
            index.scan_offset = max(index.scan_offset, result.next_begin_offset)
        # A read stops at the store's transfer limits, well before _LOAD_BATCH: more may be there.
        return index.scan_offset < self.store.get_max_offset_in_queue(tp.TIMER_TOPIC, 0)

    async def _roll(self, stored_before_ms: int) -> bool:
        """Store again every pending timer stored before the given time. True when any was."""
        old = self.index.pop_stored_before(stored_before_ms)
        if not old:
            return False
        rolled: list[TimerEntry] = []
        try:
            await self._store_again(old, rolled)
        finally:
            # The new copies are indexed by the next load; the old entries are done with.
            self.index.done(rolled)
            self.index.put_back(old[len(rolled):])
        log.info("timer: %d long-waiting timers stored again", len(rolled))
        return True

    async def _store_again(self, old: list[TimerEntry], rolled: list[TimerEntry]) -> None:
        """Write each old timer's message to the timer topic again; append each one done to `rolled`."""
        host = self.store_host()
        for entry in old:
            found = self.store.select_one_message_by_offset(entry.commit_log_offset)
            if found is None:
                log.error("timer message at CommitLog offset %d is gone; not delivered", entry.commit_log_offset)
                rolled.append(entry)
                continue
            try:
                with found:
                    stored = decode_record(found.buffer, decompress=False)
            except OrbitMQError:
                log.error("timer message at CommitLog offset %d is unreadable; dropped", entry.commit_log_offset)
                rolled.append(entry)
                continue
            again = MessageExtBrokerInner(
                topic=tp.TIMER_TOPIC, body=stored.body, flag=stored.flag, properties=dict(stored.properties),
                queue_id=0, sys_flag=stored.sys_flag, born_timestamp=stored.born_timestamp,
                born_host=stored.born_host, store_host=host, reconsume_times=stored.reconsume_times,
                tags_code=entry.deliver_ms,
            )
            again.refresh_properties_string()
            result = await self.store.put_message(again)
            if not result.is_ok:
                log.warning("timer at offset %d not rolled over: %s", entry.queue_offset, result.status.value)
                break
            rolled.append(entry)

    async def _deliver(self, due: list[TimerEntry]) -> int:
        """Write due timers to their real topics in order. Returns how many are done with."""
        host = self.store_host()
        msgs: list[MessageExtBrokerInner | None] = []
        for entry in due:
            found = self.store.select_one_message_by_offset(entry.commit_log_offset)
            if found is None:
                log.error("timer message at CommitLog offset %d is gone; not delivered", entry.commit_log_offset)
                msgs.append(None)
                continue
            try:
                with found:
                    stored = decode_record(found.buffer, decompress=False)
            except OrbitMQError:
                log.error("timer message at CommitLog offset %d is unreadable; not delivered", entry.commit_log_offset)
                msgs.append(None)
                continue
            msgs.append(restored_message(stored, host))
        results = await asyncio.gather(*(self._put(m) for m in msgs))
        for i, ok in enumerate(results):
            if not ok:
                return i
        return len(results)

    async def _put(self, msg: MessageExtBrokerInner | None) -> bool:
        """Store one due message; False only for a refusal worth trying again."""
        if msg is None:
            return True
        if not msg.topic:
            log.error("timer message without %s dropped", mc.REAL_TOPIC)
            return True
        result = await self.store.put_message(msg)
        if result.is_ok:
            if self.delivery_health.failing:
                self.delivery_health.succeeded()
            return True
        log.warning("timer message to %s not delivered yet: %s %s", msg.topic, result.status.value, result.remark)
        return result.status.value in ("MESSAGE_ILLEGAL", "PROPERTIES_SIZE_EXCEEDED")

    # --- checkpoint ------------------------------------------------------------------

    async def _save_loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval_ms / 1000)
            await self.save_once()

    async def save_once(self) -> None:
        """One periodic checkpoint save. A failing write (a full disk) must not stop delivery:
        the next round tries again, and only the start and the end of a run of failures
        are logged."""
        try:
            await self._save()
        except OSError as exc:
            self.checkpoint_health.failed(exc)
        else:
            self.checkpoint_health.succeeded()

    async def _save(self) -> None:
        # One write at a time, even when a cancelled save left its thread running.
        if self._writing is not None:
            await asyncio.gather(self._writing, return_exceptions=True)
        checkpoint = self._latest
        if checkpoint != self._saved:
            text = jsonbody.dumps_pretty(checkpoint.to_json())
            self._writing = asyncio.ensure_future(asyncio.to_thread(write_atomically, self.path, text))
            await asyncio.shield(self._writing)
            self._saved = checkpoint
