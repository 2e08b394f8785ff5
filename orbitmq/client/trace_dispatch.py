"""Message trace off the hot path: hooks that record sends and consumptions, and a batching dispatcher.

`Producer(..., enable_msg_trace=True, trace_topic=None)` and the same options
on `PushConsumer` turn tracing on (`trace_topic` defaults to
RMQ_SYS_TRACE_TOPIC, which a broker creates with traceTopicEnable; a topic of
your own works as well).

* A hook only builds a small `TraceContext` and appends it to the
  dispatcher's bounded buffer; it never waits and never fails the send or
  the consumption. A full buffer drops the record and counts it (`dropped`).
* The dispatcher's task drains the buffer in batches: the records of up to
  `batch_size` contexts go in one trace message (split below
  `max_message_bytes`), keyed by the traced message ids, sent by a producer of
  its own (group `_INNER_TRACE_PRODUCER-<topic>`), made by the factory the
  owner passes in (`producer.trace_producers`: its own client instance,
  signing like the owner).
  A batch that cannot be sent is logged and counted as dropped.
* `close()` sends what is buffered (bounded by a timeout) and stops.

Sends are traced when the broker stored the message and did not turn tracing
off (`TRACE_ON=false`); messages to the trace topic are never traced.
Consumptions are traced as SubBefore (when the listener starts) and SubAfter
(when it returns: cost, success, and why it ended).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from orbitmq.client.listener import Listener, ListenerRunner
from orbitmq.client.message import Message as ClientMessage
from orbitmq.client.results import ConsumeOrderlyResult, ConsumeResult, SendResult, SendStatus
from orbitmq.client.trace import (
    DEFAULT_TRACE_TOPIC,
    TRACE_PRODUCER_GROUP_PREFIX,
    ConsumeReturnType,
    MessageType,
    TraceBean,
    TraceContext,
    TraceType,
    encode,
    trace_keys,
)
from orbitmq.common import properties as mc
from orbitmq.common.message import Message, MessageExt
from orbitmq.common.msgid import UniqueIdGenerator
from orbitmq.errors import OrbitMQError

log = logging.getLogger(__name__)

_request_ids = UniqueIdGenerator()
#: A trace message's KEYS must fit the 32 KiB property limit with room to spare.
_MAX_KEYS_CHARS = 16_000


class TraceSender(Protocol):
    """What the dispatcher needs of its producer."""

    async def start(self) -> None: ...

    async def send(self, msg: ClientMessage) -> Any: ...

    async def shutdown(self) -> None: ...


#: Makes the dispatcher's (not yet started) producer of the given group.
TraceSenderFactory = Callable[[str], TraceSender]


class TraceDispatcher:
    """Owns the trace buffer, the draining task and the trace producer."""

    def __init__(
        self, make_producer: TraceSenderFactory, trace_topic: str | None = None, *, capacity: int = 2048,
        batch_size: int = 100, max_message_bytes: int = 128_000, linger_s: float = 0.02,
    ) -> None:
        self.make_producer = make_producer
        self.topic = trace_topic or DEFAULT_TRACE_TOPIC
        self.capacity = capacity
        self.batch_size = batch_size
        self.max_message_bytes = max_message_bytes
        self.linger_s = linger_s
        self.dropped = 0
        self.sent_messages = 0
        self._buffer: collections.deque[TraceContext] = collections.deque()
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._producer: TraceSender | None = None

    def append(self, ctx: TraceContext) -> None:
        """Buffer one context without waiting; drop (and count) it when the buffer is full."""
        if len(self._buffer) >= self.capacity:
            self.dropped += 1
            return
        self._buffer.append(ctx)
        self._idle.clear()
        self._wake.set()
        if self._task is None:
            self._task = asyncio.ensure_future(self._drain())

    async def flush(self, timeout: float = 5.0) -> bool:
        """Wait until everything buffered so far was sent or dropped; False on timeout."""
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except TimeoutError:
            return False

    async def close(self, timeout: float = 5.0) -> None:
        # Not just the buffer: a batch already taken from it may still be in flight,
        # and cancelling the drain task then would lose it. _idle covers both.
        if not self._idle.is_set() and not await self.flush(timeout):
            log.warning("trace dispatcher closed with %d records unsent", len(self._buffer))
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.shutdown()
        if self.dropped:
            log.warning("message trace dropped %d records", self.dropped)

    async def _drain(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            await asyncio.sleep(self.linger_s)  # let a burst gather into one batch
            while self._buffer:
                batch = [self._buffer.popleft() for _ in range(min(self.batch_size, len(self._buffer)))]
                try:
                    await self._send(batch)
                except asyncio.CancelledError:
                    raise
                except (OrbitMQError, OSError) as exc:
                    self.dropped += len(batch)
                    log.warning("message trace batch of %d records not sent: %s", len(batch), exc)
            self._idle.set()

    async def _send(self, batch: Sequence[TraceContext]) -> None:
        if self._producer is None:
            producer = self.make_producer(TRACE_PRODUCER_GROUP_PREFIX + self.topic)
            await producer.start()
            self._producer = producer
        body: list[str] = []
        keys: set[str] = set()
        size = 0
        chunks: list[tuple[str, set[str]]] = []
        for ctx in batch:
            data = encode(ctx)
            more = trace_keys(ctx)
            if body and (size + len(data) > self.max_message_bytes or
                         sum(len(k) + 1 for k in keys | more) > _MAX_KEYS_CHARS):
                chunks.append(("".join(body), keys))
                body, keys, size = [], set(), 0
            body.append(data)
            keys |= more
            size += len(data)
        if body:
            chunks.append(("".join(body), keys))
        for data, chunk_keys in chunks:
            await self._producer.send(ClientMessage(self.topic, data.encode(), keys=sorted(chunk_keys)))
            self.sent_messages += 1


# --- hooks ---------------------------------------------------------------------------------


class SendTracer:
    """The producer side: one Pub record per stored single message."""

    def __init__(self, dispatcher: TraceDispatcher, group: str) -> None:
        self.dispatcher = dispatcher
        self.group = group

    def sent(self, msg: Message, result: SendResult, broker_addr: str, started: float) -> None:
        if not result.trace_on or msg.topic == self.dispatcher.topic:
            return
        if msg.properties.get(mc.TRANSACTION_PREPARED) == "true":
            kind = MessageType.TRANS_HALF
        elif msg.delay_time_level > 0:
            kind = MessageType.DELAY
        else:
            kind = MessageType.NORMAL
        cost = int((time.monotonic() - started) * 1000)
        bean = TraceBean(msg_id=result.msg_id, topic=msg.topic, tags=msg.tags, keys=msg.properties.get(mc.KEYS),
                         store_host=broker_addr, body_length=len(msg.body), msg_type=kind,
                         offset_msg_id=result.offset_msg_id)
        self.dispatcher.append(TraceContext(
            TraceType.PUB, int(time.time() * 1000) - cost, self.group, [bean], region_id=result.region_id,
            cost_ms=cost, success=result.status is SendStatus.SEND_OK,
        ))

    def ended(self, msg: Message, msg_id: str, broker: str, state: str, from_check: bool) -> None:
        """An EndTransaction record: what the producer told the broker about a transactional message."""
        bean = TraceBean(msg_id=msg_id, topic=msg.topic, tags=msg.tags, keys=msg.properties.get(mc.KEYS),
                         store_host=broker, msg_type=MessageType.TRANS_COMMIT, transaction_id=msg_id,
                         transaction_state=state, from_transaction_check=from_check)
        self.dispatcher.append(TraceContext(TraceType.END_TRANSACTION, int(time.time() * 1000), self.group, [bean]))

    async def close(self) -> None:
        await self.dispatcher.close()


class TracedListenerRunner(ListenerRunner):
    """A ListenerRunner that records SubBefore and SubAfter around each call of the listener."""

    def __init__(self, listener: Listener, workers: int, timeout_s: float, dispatcher: TraceDispatcher,
                 group: str, min_workers: int = 0) -> None:
        super().__init__(listener, workers, timeout_s, min_workers)
        self.dispatcher = dispatcher
        self.group = group

    async def run(self, msgs: list[MessageExt], context: object = None) -> Any | None:
        traced = [m for m in msgs if m.properties.get(mc.TRACE_SWITCH) != "false"
                  and m.topic != self.dispatcher.topic]
        if not traced:
            return await super().run(msgs, context)
        request_id = _request_ids.next()
        region = traced[0].properties.get(mc.MSG_REGION) or "DefaultRegion"
        beans = [TraceBean(msg_id=m.msg_id, topic=m.topic, tags=m.tags, keys=m.properties.get(mc.KEYS),
                           store_host=m.store_host, body_length=m.store_size, retry_times=m.reconsume_times)
                 for m in traced]
        started = time.monotonic()
        self.dispatcher.append(TraceContext(TraceType.SUB_BEFORE, int(time.time() * 1000), self.group, beans,
                                            region_id=region, request_id=request_id))
        result = await super().run(msgs, context)
        elapsed = time.monotonic() - started
        ok = result in (ConsumeResult.CONSUME_SUCCESS, ConsumeOrderlyResult.SUCCESS,
                        ConsumeResult.CONSUME_SUCCESS.value, ConsumeOrderlyResult.SUCCESS.value)
        if ok:
            code = ConsumeReturnType.SUCCESS
        elif result is None:
            code = ConsumeReturnType.TIME_OUT if elapsed >= self.timeout_s else ConsumeReturnType.EXCEPTION
        else:
            code = ConsumeReturnType.FAILED
        self.dispatcher.append(TraceContext(
            TraceType.SUB_AFTER, int(time.time() * 1000), self.group, beans, region_id=region,
            cost_ms=int(elapsed * 1000 / len(beans)), success=ok, request_id=request_id, context_code=int(code),
        ))
        return result
