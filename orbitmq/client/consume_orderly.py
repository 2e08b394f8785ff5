"""Orderly consumption: one queue consumed by one task, in offset order, under a broker lock.

In clustering mode a queue is consumed only while this client holds its
lock on the broker (LOCK_BATCH_MQ, renewed every 20 s, trusted for 30 s), so
two members never consume one queue at once even while a rebalance moves
it. Messages are taken oldest first; on SUCCESS the offset after them is
recorded; on SUSPEND_CURRENT_QUEUE_A_MOMENT (or a listener failure) they go
back to the front of the queue and are consumed again after
`suspend_current_queue_time_ms`, unless they exceeded the maximum reconsume
times (unlimited by default), in which case they are sent to the dead
letter queue (CONSUMER_SEND_MSG_BACK with delay level -1) and the queue
moves on.

OrbitMQ's retry policy (consumer options): `orderly_max_attempts=N` sends a
batch to `%DLQ%<group>` after its N-th failed attempt, whatever
max_reconsume_times says; `orderly_backoff_ms=B` waits B, 2B, 4B, ... (up to
`orderly_backoff_max_ms`) between attempts instead of the fixed pause. A
listener taking a context (consume_context.py) may also set the next pause
(`suspend_current_queue_time_millis`), send the batch to the DLQ at once
(`send_to_dlq`), or turn `auto_commit` off and commit with COMMIT.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from orbitmq.client.config import ConsumerConfig, MessageModel
from orbitmq.client.consume_context import ConsumeOrderlyContext
from orbitmq.client.listener import ListenerRunner
from orbitmq.client.offset_store import OffsetStore
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.queue import MessageQueue
from orbitmq.client.rebalance import Rebalance
from orbitmq.client.results import ConsumeOrderlyResult, ConsumeResult
from orbitmq.client.tasks import cancel_and_wait
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt

log = logging.getLogger(__name__)

LOCK_RENEW_INTERVAL_S = 20.0
RELOCK_DELAY_S = 0.1
SendToDlq = Callable[[MessageExt, MessageQueue], Awaitable[bool]]

_SUCCESS_VALUES = {ConsumeOrderlyResult.SUCCESS, ConsumeResult.CONSUME_SUCCESS, "SUCCESS", "CONSUME_SUCCESS"}
_COMMIT_VALUES = {ConsumeOrderlyResult.COMMIT, "COMMIT"}
_ROLLBACK_VALUES = {ConsumeOrderlyResult.ROLLBACK, "ROLLBACK"}


def _result_name(result: Any) -> str:
    if result is None:
        return "no result (it raised or timed out)"
    return str(getattr(result, "value", result))


class OrderlyConsumeService:
    def __init__(
        self,
        config: ConsumerConfig,
        runner: ListenerRunner,
        offset_store: OffsetStore,
        rebalance: Rebalance,
        send_to_dlq: SendToDlq,
    ) -> None:
        self.config = config
        self.runner = runner
        self.offset_store = offset_store
        self.rebalance = rebalance
        self.send_to_dlq = send_to_dlq
        if config.orderly_max_attempts > 0:
            self.max_reconsume = config.orderly_max_attempts - 1
        elif config.max_reconsume_times >= 0:
            self.max_reconsume = config.max_reconsume_times
        else:
            self.max_reconsume = (1 << 31) - 1
        self.clustering = config.message_model is MessageModel.CLUSTERING
        self._tasks: set[asyncio.Task[None]] = set()
        self._locks: dict[MessageQueue, asyncio.Lock] = {}
        self._renewer: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.clustering:
            self._renewer = asyncio.ensure_future(self._renew_locks())

    async def _renew_locks(self) -> None:
        while True:
            await asyncio.sleep(LOCK_RENEW_INTERVAL_S)
            try:
                await self.rebalance.lock_all()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("renewing queue locks failed")

    def queue_lock(self, mq: MessageQueue) -> asyncio.Lock:
        """Held while a batch of `mq` is being consumed; rebalance takes it before giving `mq` up."""
        lock = self._locks.get(mq)
        if lock is None:
            lock = self._locks[mq] = asyncio.Lock()
        return lock

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue[Any], mq: MessageQueue, dispatch: bool) -> None:
        if dispatch:
            self._spawn(self._consume(pq, mq))

    def _spawn(self, coro: Awaitable[None], delay_s: float = 0.0) -> None:
        async def later() -> None:
            await asyncio.sleep(delay_s)
            await coro

        task = asyncio.ensure_future(later() if delay_s else coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _consume(self, pq: ProcessQueue[Any], mq: MessageQueue) -> None:
        batch = max(1, self.config.consume_message_batch_max_size)
        while not pq.dropped:
            if self.clustering and (not pq.locked or pq.is_lock_expired()):
                # Without a fresh lock another member may own the queue: try to lock again, then resume.
                await asyncio.sleep(RELOCK_DELAY_S)
                if pq.dropped:
                    break
                if not await self.rebalance.lock(mq, pq):
                    await asyncio.sleep(self.config.suspend_current_queue_time_ms / 1000)
                continue
            async with self.queue_lock(mq):
                if pq.dropped:
                    break
                msgs = pq.take_messages(batch)
                if not msgs:
                    return  # take_messages cleared pq.consuming; the next pull starts a new task
                context = ConsumeOrderlyContext(mq)
                result = await self.runner.run(msgs, context)
                if pq.dropped:
                    break
                if result in _SUCCESS_VALUES and not context.send_to_dlq:
                    if context.auto_commit:
                        self._commit(pq, mq)
                    continue
                if result in _COMMIT_VALUES and not context.send_to_dlq:
                    self._commit(pq, mq)
                    continue
                if result in _ROLLBACK_VALUES and not context.send_to_dlq:
                    pq.rollback()
                    suspend_ms = self._suspend_ms(msgs, context)
                elif await self._exhausted(msgs, mq, result, context.send_to_dlq):
                    self._commit(pq, mq)
                    continue
                else:
                    suspend_ms = self._suspend_ms(msgs, context)
                    for msg in msgs:
                        msg.reconsume_times += 1
                    pq.make_messages_to_consume_again(msgs)
            await asyncio.sleep(suspend_ms / 1000)
        # Dropped: whoever owns the queue next starts from the committed offset.
        pq.consuming = False

    def _commit(self, pq: ProcessQueue[Any], mq: MessageQueue) -> None:
        offset = pq.commit()
        if offset >= 0:
            self.offset_store.update_offset(mq, offset, False)

    def _suspend_ms(self, msgs: list[MessageExt], context: ConsumeOrderlyContext) -> int:
        """The wait before the failed batch is consumed again (its attempt count not yet raised)."""
        if context.suspend_current_queue_time_millis >= 0:
            return context.suspend_current_queue_time_millis
        base = self.config.orderly_backoff_ms
        if base <= 0:
            return self.config.suspend_current_queue_time_ms  # RocketMQ's fixed pause
        failures = max(m.reconsume_times for m in msgs)
        return int(min(base * (2 ** min(failures, 30)), max(base, self.config.orderly_backoff_max_ms)))

    async def _exhausted(self, msgs: list[MessageExt], mq: MessageQueue, result: Any, give_up: bool) -> bool:
        """True when the batch went to the dead letter queue: asked for, or every message used its attempts."""
        if not give_up and not all(m.reconsume_times >= self.max_reconsume for m in msgs):
            return False
        for msg in msgs:
            if mc.ORBITMQ_LAST_ERROR not in msg.properties:
                msg.properties[mc.ORBITMQ_LAST_ERROR] = f"listener returned {_result_name(result)}"
            if not await self.send_to_dlq(msg, mq):
                return False
        log.warning("%s of %s went to the dead letter queue after %d attempt(s)",
                    [m.msg_id for m in msgs], mq, max(m.reconsume_times for m in msgs) + 1)
        return True

    async def shutdown(self, timeout_s: float) -> None:
        if self._renewer is not None:
            await cancel_and_wait([self._renewer])
        pending = list(self._tasks)
        if pending:
            _, still = await asyncio.wait(pending, timeout=timeout_s)
            await cancel_and_wait(still, 1.0)
        self.runner.close()
