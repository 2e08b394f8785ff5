"""Concurrent consumption: batches of a queue consumed in parallel, offsets committed in order.

Each pulled batch is cut into chunks of `consume_message_batch_max_size` and
each chunk is consumed as its own task. When a chunk is done its messages
leave the process queue, and the offset recorded for the queue is the lowest
message still in flight, so a crash redelivers, never skips.

RECONSUME_LATER (or a listener failure): in clustering mode each message is
sent back to the broker (CONSUMER_SEND_MSG_BACK, delay level 0 lets the broker
choose 3 + reconsumeTimes); if that fails a copy goes to `%RETRY%<group>`
through the internal producer; if that fails too the message stays in the
process queue (holding the offset back) and is consumed again locally after
5 s. In broadcasting mode messages are consumed again locally, up to the
maximum reconsume times, after which they are dropped with an error log.

A listener taking a context (consume_context.py) chooses per batch: ackIndex
(which messages of a successful batch failed), the next delay level or an
explicit delay in ms (the broker's timer serves it), or the DLQ at once for
the batch or for single messages (`give_up`). The send-back carries the last
error text and attempt count, which the broker records on the new record.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from orbitmq.client.config import ConsumerConfig, MessageModel
from orbitmq.client.consume_context import ConsumeConcurrentlyContext
from orbitmq.client.listener import ListenerRunner
from orbitmq.client.offset_store import OffsetStore
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import ConsumeResult
from orbitmq.client.tasks import cancel_and_wait
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt

log = logging.getLogger(__name__)

LOCAL_RETRY_DELAY_S = 5.0
SendBack = Callable[[MessageExt, MessageQueue, "RetryChoice"], Awaitable[bool]]


@dataclass(frozen=True)
class RetryChoice:
    """How a failed message goes back: delay level (0: the broker picks, < 0: the DLQ), or ms."""

    delay_level: int = 0
    delay_ms: int | None = None


class ConcurrentConsumeService:
    def __init__(
        self,
        config: ConsumerConfig,
        runner: ListenerRunner,
        offset_store: OffsetStore,
        send_back: SendBack,
    ) -> None:
        self.config = config
        self.runner = runner
        self.offset_store = offset_store
        self.send_back = send_back
        self.max_reconsume = 16 if config.max_reconsume_times < 0 else config.max_reconsume_times
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, msgs: list[MessageExt], pq: ProcessQueue[Any], mq: MessageQueue, delay_s: float = 0.0) -> None:
        size = max(1, self.config.consume_message_batch_max_size)
        for i in range(0, len(msgs), size):
            task = asyncio.ensure_future(self._consume(msgs[i : i + size], pq, mq, delay_s))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _consume(self, msgs: list[MessageExt], pq: ProcessQueue[Any], mq: MessageQueue, delay_s: float) -> None:
        if delay_s:
            await asyncio.sleep(delay_s)
        if pq.dropped:
            return
        context = ConsumeConcurrentlyContext(mq)
        result = await self.runner.run(msgs, context)
        if pq.dropped:
            # The queue went to another member meanwhile; it redelivers from the committed offset.
            return
        ok = result is ConsumeResult.CONSUME_SUCCESS or result == ConsumeResult.CONSUME_SUCCESS.value
        # RocketMQ's ackIndex: on success the messages after it failed; on RECONSUME_LATER all did.
        ack_index = min(context.ack_index, len(msgs) - 1) if ok else -1
        failed = [m for i, m in enumerate(msgs) if i > ack_index or context.gave_up(m)]
        again: list[MessageExt] = []
        if failed and self.config.message_model is MessageModel.CLUSTERING:
            for msg in failed:
                choice = self._retry_choice(msg, context)
                if mc.ORBITMQ_LAST_ERROR not in msg.properties:
                    msg.properties[mc.ORBITMQ_LAST_ERROR] = (
                        "listener gave up on it" if choice.delay_level < 0
                        else f"listener returned {getattr(result, 'value', result)}")
                if not await self.send_back(msg, mq, choice):
                    msg.reconsume_times += 1
                    again.append(msg)
        elif failed:
            for msg in failed:
                if msg.reconsume_times < self.max_reconsume and not self._retry_choice(msg, context).delay_level < 0:
                    msg.reconsume_times += 1
                    again.append(msg)
                else:
                    log.error("broadcast message %s failed %d times; dropping it", msg.msg_id,
                              msg.reconsume_times + 1)
        retry_ids = {id(m) for m in again}
        done = [m for m in msgs if id(m) not in retry_ids] if again else msgs
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.dropped:
            self.offset_store.update_offset(mq, offset, True)
        if again:
            self.submit(again, pq, mq, LOCAL_RETRY_DELAY_S)

    @staticmethod
    def _retry_choice(msg: MessageExt, context: ConsumeConcurrentlyContext) -> RetryChoice:
        if context.send_to_dlq or context.gave_up(msg) or context.delay_level_when_next_consume < 0:
            return RetryChoice(delay_level=-1)
        return RetryChoice(delay_level=context.delay_level_when_next_consume, delay_ms=context.next_delay_ms)

    async def shutdown(self, timeout_s: float) -> None:
        """Let running consumptions finish (up to `timeout_s`), cancel the rest."""
        pending = list(self._tasks)
        if pending:
            _, still = await asyncio.wait(pending, timeout=timeout_s)
            await cancel_and_wait(still, 1.0)
        self.runner.close()
