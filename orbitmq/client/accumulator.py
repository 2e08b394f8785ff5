"""Natural batching of a producer's sends (RocketMQ 5's auto batch, Kafka's record accumulator).

Plain sends that are pending together for one topic travel as one SEND_BATCH_MESSAGE request,
and each caller still gets its own `SendResult` (its own UNIQ_KEY, offset message id and queue
offset) or its own error. "Pending together" means: started in the same event-loop turn, or
within `linger_ms` of the first one when the producer is configured to wait. With the default
`linger_ms=0` nothing is delayed: a send alone in its turn leaves as the ordinary
SEND_MESSAGE_V2 request, byte for byte, so one-at-a-time latency and the wire are unchanged.

Only messages a batch can carry the same way as a single send are coalesced: no delay level or
timer, no transaction, no request-reply, no queue chosen by the caller, and a body below the
compression threshold (batch items are not compressed). Everything else bypasses the accumulator.

The module is sans-IO apart from the event loop's scheduling: sending is the producer's callback.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from orbitmq.client.batch import ITEM_OVERHEAD
from orbitmq.client.results import SendResult
from orbitmq.common import properties as mc
from orbitmq.common.message import Message
from orbitmq.errors import BrokerError, MessageValidationError

#: System properties that a batch item carries exactly as a single send does; any other reserved
#: property (delay, timer, transaction, request-reply, retry bookkeeping...) keeps a message out.
_ITEM_PROPERTIES = frozenset({mc.KEYS, mc.TAGS, mc.WAIT_STORE_MSG_OK, mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX})
_SPECIAL_PROPERTIES = (mc.RESERVED_NAMES - _ITEM_PROPERTIES) | {
    mc.TIMER_DELIVER_MS, mc.TIMER_DELAY_SEC, mc.TIMER_DELAY_MS, mc.START_DELIVER_TIME, mc.TTL_MS,
}

#: Sends one batch (at least two messages) and returns the batch's own result.
SendBatch = Callable[[list[Message], "float | None"], Awaitable[SendResult]]
#: Sends one message the ordinary way.
SendOne = Callable[[Message, "float | None"], Awaitable[SendResult]]


def coalescable(msg: Message, compress_over: int) -> bool:
    """Whether `msg` may share a batch with other sends of its topic."""
    if len(msg.body) >= compress_over or msg.topic.startswith("%"):
        return False
    return not any(name in _SPECIAL_PROPERTIES for name in msg.properties)


def estimated_item_size(msg: Message) -> int:
    """A batch item's size without encoding it: exact for ASCII properties, at most 4x short otherwise
    (so a batch of `batch_max_bytes` stays far below maxMessageSize whatever the text)."""
    props = msg.properties
    return ITEM_OVERHEAD + len(msg.body) + sum(len(k) + len(v) + 2 for k, v in props.items()) - (1 if props else 0)


def split_result(result: SendResult, msgs: list[Message]) -> list[SendResult]:
    """One `SendResult` per message of a stored batch.

    The broker answers a batch with its offset message ids joined by commas and the queue offset
    of the first message; the others follow it one by one in the same queue.
    """
    offset_ids = result.offset_msg_id.split(",") if result.offset_msg_id else []
    n = len(offset_ids)
    first = result.queue_offset
    status, mq, region, trace_on = result.status, result.message_queue, result.region_id, result.trace_on
    return [
        SendResult(status, msg.unique_key or "", offset_ids[i] if i < n else "", mq,
                   first + i if first >= 0 else first, region, trace_on)
        for i, msg in enumerate(msgs)
    ]


@dataclass
class _Pending:
    """Sends gathered for one batch; the first sender (the leader) sends them all."""

    msgs: list[Message] = field(default_factory=list)
    #: The followers' futures, index i for msgs[i + 1] (the leader returns its own result).
    futures: list[asyncio.Future[SendResult]] = field(default_factory=list)
    size: int = 0
    #: Set when the leader should stop waiting for company (linger over, or the producer closing).
    wake: asyncio.Future[None] | None = None
    #: The loop, looked up by the first follower (a lone send never needs it: Python 3.11's
    #: get_running_loop costs a getpid system call).
    loop: asyncio.AbstractEventLoop | None = None


class SendAccumulator:
    """Joins a producer's coalescable sends per (topic, WAIT, timeout) into batches.

    A send made while nothing of the producer is on its way to a broker goes at once (with
    `linger_ms=0`): one send at a time pays no wait. Otherwise the first send of a batch leads: it
    waits one loop turn (or `linger_ms`) for others to join.
    Alone, it is sent from the caller's own task, as if there were no accumulator; with company,
    one task sends the batch and settles every sender's future, so that a sender that gives up
    (is cancelled) never takes the others' results with it. Owned by one producer and used on its
    event loop only.
    """

    def __init__(self, send_one: SendOne, send_batch: SendBatch, *, linger_ms: int = 0,
                 batch_max_bytes: int = 256 * 1024, batch_max_count: int = 1024) -> None:
        self._send_one = send_one
        self._send_batch = send_batch
        self._linger_s = max(linger_ms, 0) / 1000.0
        self._max_bytes = batch_max_bytes
        self._max_count = batch_max_count
        self._pending: dict[tuple[str, bool, float | None], _Pending] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        #: Sends and batches of this producer waiting for the broker now.
        self._in_flight = 0

    async def send(self, msg: Message, timeout: float | None) -> SendResult:
        """Send `msg` (already validated, UNIQ_KEY set), alone or with others; its own result or error."""
        key = (msg.topic, msg.wait_store_msg_ok, timeout)
        size = estimated_item_size(msg)
        pending = self._pending.get(key)
        if pending is not None and pending.size + size <= self._max_bytes and len(pending.msgs) < self._max_count:
            loop = pending.loop
            if loop is None:
                loop = pending.loop = asyncio.get_running_loop()
            fut: asyncio.Future[SendResult] = loop.create_future()
            pending.msgs.append(msg)
            pending.futures.append(fut)
            pending.size += size
            return await fut
        if self._in_flight == 0 and self._linger_s <= 0 and pending is None:
            # Nothing of this producer is on its way to a broker: waiting a loop turn for company
            # would only add latency. Sends that start while this one is out will batch.
            return await self._counted(self._send_one(msg, timeout))
        # A full batch stays with its leader, who sends it after its wait; this send leads the next.
        pending = self._pending[key] = _Pending([msg], [], size)
        try:
            await self._wait_for_company(pending)
        except asyncio.CancelledError:
            # This sender gave up while waiting: the ones that joined it are sent without it.
            if self._pending.get(key) is pending:
                del self._pending[key]
            if pending.futures:
                self._spawn(pending.msgs[1:], pending.futures, timeout)
            raise
        if self._pending.get(key) is pending:
            del self._pending[key]
        if not pending.futures:
            return await self._counted(self._send_one(msg, timeout))
        assert pending.loop is not None  # set by the first follower
        own = pending.loop.create_future()
        self._spawn(pending.msgs, [own, *pending.futures], timeout)
        return await own

    async def _wait_for_company(self, pending: _Pending) -> None:
        if self._linger_s <= 0:
            await asyncio.sleep(0)  # one loop turn: every send started in this one has joined
            return
        loop = asyncio.get_running_loop()
        wake = pending.wake = loop.create_future()
        handle = loop.call_later(self._linger_s, _set_done, wake)
        try:
            await wake
        finally:
            handle.cancel()

    async def _counted(self, send: Awaitable[SendResult]) -> SendResult:
        self._in_flight += 1
        try:
            return await send
        finally:
            self._in_flight -= 1

    def _spawn(self, msgs: list[Message], futures: list[asyncio.Future[SendResult]], timeout: float | None) -> None:
        self._in_flight += 1
        task = asyncio.ensure_future(self._deliver(msgs, futures, timeout))
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._in_flight -= 1

    async def _deliver(self, msgs: list[Message], futures: list[asyncio.Future[SendResult]],
                       timeout: float | None) -> None:
        if len(msgs) == 1:
            await self._one(msgs[0], futures[0], timeout)
            return
        try:
            result = await self._send_batch(msgs, timeout)
        except (BrokerError, MessageValidationError):
            # The broker refused the whole batch (it stores all or nothing), or one item cannot be
            # encoded: each message is sent on its own so that each gets its own verdict.
            await asyncio.gather(*(self._one(m, f, timeout) for m, f in zip(msgs, futures)))
            return
        except Exception as exc:  # noqa: BLE001 - handed to every sender of the batch
            for fut in futures:
                _settle(fut, exc)
            return
        for fut, one in zip(futures, split_result(result, msgs)):
            _settle(fut, one)

    async def _one(self, msg: Message, fut: asyncio.Future[SendResult], timeout: float | None) -> None:
        try:
            result = await self._send_one(msg, timeout)
        except Exception as exc:  # noqa: BLE001 - handed to the sender
            _settle(fut, exc)
            return
        _settle(fut, result)

    async def close(self) -> None:
        """Stop lingering: send what is pending now, and wait until every batch has been answered."""
        for pending in list(self._pending.values()):
            if pending.wake is not None:
                _set_done(pending.wake)
        await asyncio.sleep(0)  # woken leaders hand their batches to tasks
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)


def _set_done(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _settle(fut: asyncio.Future[SendResult], outcome: SendResult | BaseException) -> None:
    if fut.done():
        return  # its sender gave up (cancelled)
    if isinstance(outcome, BaseException):
        fut.set_exception(outcome)
    else:
        fut.set_result(outcome)
