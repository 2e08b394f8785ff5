"""The broker's transaction service: END_TRANSACTION resolution and the half-message check loop.

Resolution (`end`): the half message named by its CommitLog offset is read
back and validated (producer group, half queue offset, CommitLog offset;
RocketMQ's remarks, §3.6). A commit writes the real message, then an op
record; a rollback writes only the op record. Each half message is resolved
at most once (see `progress.HalfProgress.reserve`): a repeated or late
END_TRANSACTION is answered SUCCESS and changes nothing, so a committed
message becomes visible exactly once. An answer that names a copy the check
loop has since superseded resolves the newest copy instead.

Checks (`check_once`, every transactionCheckInterval): the half queue is
read from the stored progress. A message without an op record whose age
(from its birth) passed transactionTimeOut, or its own
CHECK_IMMUNITY_TIME_IN_SECONDS, is re-appended with TRANSACTION_CHECK_TIMES
raised (the old copy gets an op record) and the new copy is sent with
CHECK_TRANSACTION_STATE to one live connection of its producer group; the
producer answers with END_TRANSACTION (fromTransactionCheck=true). A message
already checked transactionCheckMax times is moved to
TRANS_CHECK_MAX_TIME_TOPIC with a warning and not checked again. The
progress (consumer offsets of CID_RMQ_SYS_TRANS on the half and op queues)
moves over every resolved message and is persisted with the other offsets.

All state belongs to the broker's event loop.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.producers import ProducerRegistry
from orbitmq.broker.topics import PERM_READ, PERM_WRITE, TopicTable
from orbitmq.broker.transaction import messages as tm
from orbitmq.broker.transaction.progress import HalfProgress
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt, MessageExtBrokerInner
from orbitmq.common.record import decode_record
from orbitmq.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE
from orbitmq.errors import ConnectError, CorruptRecord
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.headers import CheckTransactionStateRequestHeader
from orbitmq.store.api import GetMessageStatus, MessageStore

log = logging.getLogger("orbitmq.broker.transaction")

HALF = names.TRANS_HALF_TOPIC
OP = names.TRANS_OP_HALF_TOPIC
GROUP = names.TRANS_CHECK_GROUP
_READ_BATCH = 32
#: How long END_TRANSACTION waits for a check that holds the same message (100 x 10 ms).
_BUSY_WAITS = 100
_BUSY_WAIT_S = 0.01


@dataclass(frozen=True)
class Outcome:
    """What END_TRANSACTION answers: a response code and its remark."""

    code: int
    remark: str | None = None


OK = Outcome(ResponseCode.SUCCESS)


class Visit(enum.Enum):
    """What the check round did with one half message."""

    PASSED = "passed"  # resolved, renewed, dropped or discarded: the progress may move over it
    ASKED = "asked"  # renewed and a producer was asked
    WAITING = "waiting"  # not due yet or busy: the progress stops here
    STOP = "stop"  # not due, and neither is anything stored after it


class TransactionService:
    def __init__(
        self,
        *,
        live: LiveConfig,
        store: MessageStore,
        offsets: ConsumerOffsetTable,
        producers: ProducerRegistry,
        topics: TopicTable,
        topics_changed: Callable[[], None],
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.live = live
        self.store = store
        self.offsets = offsets
        self.producers = producers
        self.topics = topics
        self.topics_changed = topics_changed
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.progress = HalfProgress()
        #: First copy's half queue offset -> (newest copy's queue offset, its CommitLog offset).
        self._newest: dict[int, tuple[int, int]] = {}
        self._task: asyncio.Task[None] | None = None
        self._round = asyncio.Lock()

    # --- lifecycle ------------------------------------------------------------------

    def start(self) -> None:
        """Load the progress, rebuild the resolved set from the op queue, start the check loop."""
        created = False
        for topic in (HALF, OP):
            if topic not in self.topics:
                self.topics.ensure(topic, 1, PERM_READ | PERM_WRITE)
                created = True
        if created:
            self.topics_changed()
        half = self.offsets.query(GROUP, HALF, 0)
        op = self.offsets.query(GROUP, OP, 0)
        self.progress = HalfProgress(
            half if half is not None else max(self.store.get_min_offset_in_queue(HALF, 0), 0),
            op if op is not None else max(self.store.get_min_offset_in_queue(OP, 0), 0),
        )
        for op_offset, record in self._read(OP, self.progress.op_offset):
            named = tm.parse_op_body(record.body)
            if named is not None:
                self.progress.record_op(op_offset, named)
        self._task = asyncio.ensure_future(self._loop())

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        self._save_progress()

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(max(self.live.value.transaction_check_interval, 100) / 1000)
            try:
                await self.check_once()
            except Exception:  # one failed round must not end the checks
                log.exception("transaction check round failed")

    # --- reading ----------------------------------------------------------------------

    def _read(self, topic: str, offset: int, end: int | None = None) -> list[tuple[int, MessageExt]]:
        """Messages of queue 0 of `topic` from `offset` (to `end`), decoded without inflating bodies."""
        out: list[tuple[int, MessageExt]] = []
        end = self.store.get_max_offset_in_queue(topic, 0) if end is None else end
        while offset < end:
            with self.store.get_message(GROUP, topic, 0, offset, _READ_BATCH) as result:
                if result.status is not GetMessageStatus.FOUND:
                    if result.next_begin_offset > offset:
                        offset = result.next_begin_offset  # a removed range: skip it
                        continue
                    break
                for buf, qoff in zip(result.buffers, result.queue_offsets):
                    try:
                        out.append((qoff, decode_record(buf, decompress=False)))
                    except (CorruptRecord, ValueError):
                        log.warning("unreadable record at %s queue offset %d skipped", topic, qoff)
                offset = max(result.next_begin_offset, offset + 1)
        return [item for item in out if item[0] < end]

    def _half_at(self, commit_log_offset: int) -> MessageExt | None:
        if commit_log_offset < 0:
            return None
        found = self.store.select_one_message_by_offset(commit_log_offset)
        if found is None:
            return None
        with found:
            try:
                return decode_record(found.buffer, decompress=False)
            except (CorruptRecord, ValueError):
                return None

    # --- resolution -------------------------------------------------------------------

    async def end(
        self, *, group: str, table_offset: int, commit_log_offset: int, kind: int, from_check: bool
    ) -> Outcome:
        """Commit (8) or roll back (12) the half message; 0 (unknown) does nothing."""
        if kind not in (TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE):
            return OK
        half = self._half_at(commit_log_offset)
        if half is None or half.topic != HALF:
            return Outcome(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if half.properties.get(mc.PRODUCER_GROUP) != group:
            return Outcome(ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        if half.queue_offset != table_offset:
            return Outcome(ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
        if half.commit_log_offset != commit_log_offset:
            return Outcome(ResponseCode.SYSTEM_ERROR, "The commit log offset wrong")
        for _ in range(_BUSY_WAITS):
            # A check may be renewing this very message: wait, then follow it to the new copy.
            if not self.progress.is_busy(table_offset):
                break
            await asyncio.sleep(_BUSY_WAIT_S)
        if self.progress.is_resolved(table_offset):
            newer = self._newest.get(self._origin(half, table_offset))
            if newer is None or self.progress.is_resolved(newer[0]):
                log.info("transaction %s (half offset %d) already resolved; %s ignored",
                         half.unique_key, table_offset, "commit" if kind == TRANSACTION_COMMIT_TYPE else "rollback")
                return OK
            copy = self._half_at(newer[1])
            if copy is None:
                return Outcome(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
            half, table_offset = copy, newer[0]
        return await self._resolve(half, table_offset, kind == TRANSACTION_COMMIT_TYPE, from_check)

    @staticmethod
    def _origin(half: MessageExt, queue_offset: int) -> int:
        try:
            return int(half.properties.get(mc.TRANSACTION_PREPARED_QUEUE_OFFSET, queue_offset))
        except ValueError:
            return queue_offset

    async def _resolve(self, half: MessageExt, table_offset: int, commit: bool, from_check: bool) -> Outcome:
        if not self.progress.reserve(table_offset):
            return OK  # resolved meanwhile, or being resolved by a concurrent request
        try:
            if commit:
                real = tm.committed(half)
                result = await self.store.put_message(real)
                if not result.is_ok:
                    log.warning("commit of transaction %s failed: %s", half.unique_key, result.status.value)
                    return Outcome(ResponseCode.SYSTEM_ERROR, result.remark or result.status.value)
            await self._write_op(table_offset)
            self._newest.pop(self._origin(half, table_offset), None)
            log.debug("transaction %s %s%s", half.unique_key, "committed" if commit else "rolled back",
                      " after a check" if from_check else "")
            return OK
        finally:
            self.progress.release(table_offset)

    async def _write_op(self, half_offset: int) -> bool:
        """Mark the half message resolved: an op record, or (when the store refuses it) a mark in
        memory that still keeps this process from resolving it twice; False in that case."""
        result = await self.store.put_message(tm.op_record(half_offset, self.live.value.broker_addr, self.clock_ms()))
        if not result.is_ok or result.append_result is None:
            log.error("op record for half offset %d not stored: %s", half_offset, result.status.value)
            self.progress.done.add(half_offset)
            return False
        self.progress.record_op(result.append_result.logics_offset, half_offset)
        return True

    # --- checks -------------------------------------------------------------------------

    async def check_once(self) -> int:
        """One check round; returns how many CHECK_TRANSACTION_STATE requests were sent."""
        async with self._round:
            return await self._check_round()

    async def _check_round(self) -> int:
        config = self.live.value
        if config.broker_id != 0:
            return 0  # a slave neither resolves nor checks; its master does
        now = self.clock_ms()
        offset = max(self.progress.half_offset, self.store.get_min_offset_in_queue(HALF, 0))
        end = self.store.get_max_offset_in_queue(HALF, 0)
        passable_to: int | None = None  # set at the first message the progress must stop at
        sent = 0
        while offset < end and passable_to is None:
            pending, next_offset = self._unresolved(offset, end)
            if next_offset == offset:
                passable_to = offset  # nothing readable here now: try again next round
                break
            for qoff, half in pending:
                visit = await self._visit(half, qoff, now, config.transaction_time_out, config.transaction_check_max)
                if visit is Visit.ASKED:
                    sent += 1
                elif visit in (Visit.WAITING, Visit.STOP) and passable_to is None:
                    passable_to = qoff
                if visit is Visit.STOP:
                    break
            offset = next_offset
        if self.progress.advance(offset if passable_to is None else passable_to,
                                 self.store.get_max_offset_in_queue(OP, 0)):
            self._save_progress()
        return sent

    def _unresolved(self, offset: int, end: int) -> tuple[list[tuple[int, MessageExt]], int]:
        """One read of the half queue from `offset`: the unresolved messages (resolved ones are not
        even decoded) and the offset to read from next."""
        pending: list[tuple[int, MessageExt]] = []
        with self.store.get_message(GROUP, HALF, 0, offset, _READ_BATCH) as result:
            if result.status is not GetMessageStatus.FOUND:
                # A removed range is skipped; anything else ends the round where it is.
                return [], max(result.next_begin_offset, offset)
            for buf, qoff in zip(result.buffers, result.queue_offsets):
                if qoff >= end or self.progress.is_resolved(qoff):
                    continue
                try:
                    pending.append((qoff, decode_record(buf, decompress=False)))
                except (CorruptRecord, ValueError):
                    log.warning("unreadable half message at queue offset %d skipped", qoff)
            return pending, max(result.next_begin_offset, offset + 1)

    async def _visit(self, half: MessageExt, qoff: int, now: int, timeout_ms: int, check_max: int) -> Visit:
        if self.progress.is_resolved(qoff):
            return Visit.PASSED
        if now - half.born_timestamp < tm.immunity_ms(half, timeout_ms):
            # Messages are stored in about birth order; only a message's own immunity breaks it.
            return Visit.WAITING if mc.CHECK_IMMUNITY_TIME_IN_SECONDS in half.properties else Visit.STOP
        if tm.real_destination(half) is None:
            log.warning("half message at offset %d has no REAL_TOPIC/REAL_QID; dropped", qoff)
            await self._write_op(qoff)
            return Visit.PASSED
        if not self.progress.reserve(qoff):
            return Visit.WAITING
        try:
            if tm.check_times(half) >= check_max:
                return Visit.PASSED if await self._discard(half, qoff) else Visit.WAITING
            copy = tm.renewed_half(half, qoff)
            result = await self.store.put_message(copy)
            if not result.is_ok or result.append_result is None:
                log.warning("renewing half message %s failed: %s", half.unique_key, result.status.value)
                return Visit.WAITING
            copy.msg_id = result.append_result.msg_id
            self._newest[self._origin(half, qoff)] = (copy.queue_offset, copy.commit_log_offset)
            await self._write_op(qoff)
        finally:
            self.progress.release(qoff)
        return Visit.ASKED if await self._ask(copy) else Visit.PASSED

    async def _discard(self, half: MessageExt, qoff: int) -> bool:
        result = await self.store.put_message(tm.discarded(half))
        if not result.is_ok:
            return False
        if names.TRANS_CHECK_MAX_TIME_TOPIC not in self.topics:
            self.topics.ensure(names.TRANS_CHECK_MAX_TIME_TOPIC, 1, PERM_READ | PERM_WRITE)
            self.topics_changed()
        log.warning("transaction message %s of group %s discarded after %d checks (moved to %s)",
                    half.unique_key, half.properties.get(mc.PRODUCER_GROUP), tm.check_times(half),
                    names.TRANS_CHECK_MAX_TIME_TOPIC)
        self._newest.pop(self._origin(half, qoff), None)
        await self._write_op(qoff)
        return True

    async def _ask(self, copy: MessageExtBrokerInner) -> bool:
        """CHECK_TRANSACTION_STATE (oneway) to one live connection of the producer group."""
        group = copy.properties.get(mc.PRODUCER_GROUP, "")
        channels = [c for c in self.producers.channels(group) if not c.channel.closed]
        if not channels:
            log.warning("no live producer of group %s to check transaction %s", group, copy.unique_key)
            return False
        uniq = copy.unique_key or ""
        fields = CheckTransactionStateRequestHeader(
            tran_state_table_offset=copy.queue_offset, commit_log_offset=copy.commit_log_offset, msg_id=uniq,
            transaction_id=uniq, offset_msg_id=copy.msg_id,
        ).to_ext_fields()
        cmd = RemotingCommand.request(RequestCode.CHECK_TRANSACTION_STATE, fields, tm.check_body(copy), oneway=True)
        client = random.choice(channels)
        try:
            await client.channel.invoke_oneway(cmd)
        except ConnectError as exc:
            log.warning("check of transaction %s to %s failed: %s", uniq, client.client_id, exc)
            return False
        return True

    def _save_progress(self) -> None:
        self.offsets.commit(GROUP, HALF, 0, self.progress.half_offset)
        self.offsets.commit(GROUP, OP, 0, self.progress.op_offset)
