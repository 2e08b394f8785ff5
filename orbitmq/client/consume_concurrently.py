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
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from orbitmq.client.config import ConsumerConfig, MessageModel
from orbitmq.client.listener import ListenerRunner
from orbitmq.client.offset_store import OffsetStore
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import ConsumeResult
from orbitmq.client.tasks import cancel_and_wait
from orbitmq.common.message import MessageExt

log = logging.getLogger(__name__)

LOCAL_RETRY_DELAY_S = 5.0
SendBack = Callable[[MessageExt, MessageQueue], Awaitable[bool]]


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
        result = await self.runner.run(msgs)
        if pq.dropped:
            # The queue went to another member meanwhile; it redelivers from the committed offset.
            return
        ok = result is ConsumeResult.CONSUME_SUCCESS or result == ConsumeResult.CONSUME_SUCCESS.value
        again: list[MessageExt] = []
        if not ok:
            if self.config.message_model is MessageModel.CLUSTERING:
                for msg in msgs:
                    if not await self.send_back(msg, mq):
                        msg.reconsume_times += 1
                        again.append(msg)
            else:
                for msg in msgs:
                    if msg.reconsume_times < self.max_reconsume:
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

    async def shutdown(self, timeout_s: float) -> None:
        """Let running consumptions finish (up to `timeout_s`), cancel the rest."""
        pending = list(self._tasks)
        if pending:
            _, still = await asyncio.wait(pending, timeout=timeout_s)
            await cancel_and_wait(still, 1.0)
        self.runner.close()
