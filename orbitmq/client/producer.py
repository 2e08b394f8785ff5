"""Producer: send messages synchronously, asynchronously, oneway, in batches or to a chosen queue.

    producer = Producer("PG", namesrv_addr="127.0.0.1:9876")
    await producer.start()
    result = await producer.send(Message("T", b"body", tags="TagA", keys=["k1"]))
    await producer.shutdown()

Guarantees and behaviour (RocketMQ 4.9's DefaultMQProducer):

* Every message gets a UNIQ_KEY before it leaves (`SendResult.msg_id`).
* Messages are validated before any I/O (topic, body, size; batch rules).
* Queue choice is round-robin over the writable queues; a failed attempt is
  retried on another broker (sync: `retry_times_when_send_failed`, async:
  `retry_times_when_send_async_failed`) within the overall send timeout,
  after errors whose class is `retriable` (errors.py): connection failures,
  timeouts, a broker missing from the route, and the response codes RocketMQ
  5's producer retries (17, 14, 1, 2, 16, 204, 205; 4.x's list lacks 2).
  A result other than SEND_OK is retried only with
  `retry_another_broker_when_not_store_ok`. With
  `send_latency_fault_enable`, slow or failing brokers are avoided for the
  times RocketMQ's tables give.
* Sends through a selector or to an explicit queue are tried once, so that
  a message never lands on a queue other than the one chosen for its order.
* Single bodies of at least 4 KiB are zlib-compressed with sysflag bit 0
  only: every RocketMQ 4.x broker and consumer reads that as zlib (4.9.4+
  readers map compression type 0 to zlib), so adding the 4.9.4 type bits
  would buy nothing and would differ from what pre-4.9.4 producers send.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard, Unpack

from orbitmq.client import otel, request_reply
from orbitmq.client.accumulator import SendAccumulator, coalescable
from orbitmq.client.acl import acl_options
from orbitmq.client.batch import encode_batch, split_batches
from orbitmq.client.config import (
    ClientConfig,
    ProducerConfig,
    ProducerOptions,
    from_kwargs,
    pop_trace_options,
)
from orbitmq.client.fault import FaultStrategy
from orbitmq.client.hooks import SendMessageContext, SendMessageHook, run_send_hooks
from orbitmq.client.instance import CLIENT_INNER_PRODUCER, ClientInstance
from orbitmq.client.lookups import Lookups
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import SEND_STATUS_BY_CODE, SendResult, SendStatus
from orbitmq.client.selector import QueueSelector
from orbitmq.client.service import ClientService
from orbitmq.client.trace_dispatch import SendTracer, TraceDispatcher
from orbitmq.client.validation import check_batch, check_body, check_group, check_message
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.message import Message, MessageExt
from orbitmq.common.msgid import UniqueIdGenerator
from orbitmq.common.recall import parse_recall_handle
from orbitmq.common.sysflag import COMPRESSED, TRANSACTION_PREPARED_TYPE
from orbitmq.errors import (
    BrokerError,
    ClientError,
    MessageValidationError,
    OrbitMQError,
    RemotingError,
    RequestTimeout,
)
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.header_base import parse_int
from orbitmq.remoting.headers import SendMessageRequestHeader, SendMessageResponseHeader

SendCallback = Callable[[SendResult | None, BaseException | None], Any]


class Producer(ClientService):
    """An asyncio producer; see the module docstring for its guarantees."""

    _not_started = "The producer service state not OK, maybe started once or not started (call start())"

    def __init__(self, group: str = "DEFAULT_PRODUCER", **options: Unpack[ProducerOptions]) -> None:
        """`options` are `ProducerConfig`'s fields (see config.py) and the message trace switches."""
        kwargs: dict[str, Any] = dict(options)
        trace_enabled, trace_topic = pop_trace_options(kwargs)
        self.config: ProducerConfig = from_kwargs(ProducerConfig, group=group, **kwargs)
        #: Message trace (enable_msg_trace=True, trace_topic=...): see trace_dispatch.py.
        self._tracer = SendTracer(TraceDispatcher(trace_producers(self.config), trace_topic), group) \
            if trace_enabled else None
        self.group = group
        self._instance: ClientInstance | None = None
        self._fault = FaultStrategy(self.config.send_latency_fault_enable)
        self._ids = UniqueIdGenerator()
        self._topics: set[str] = set()
        self._pending: set[asyncio.Future[Any]] = set()
        #: Natural batching of plain sends (off with auto_batch=False, and when tracing: a trace
        #: record describes one send request).
        self._accumulator = SendAccumulator(
            self._send_single, self._send_coalesced, linger_ms=self.config.linger_ms,
            batch_max_bytes=min(self.config.batch_max_bytes, self.config.max_message_size),
        ) if self.config.auto_batch and self._tracer is None else None
        #: SendMessageHook objects (hooks.py), called around every send request.
        self.send_hooks: list[SendMessageHook] = []

    # --- lifecycle ---------------------------------------------------------------

    async def start(self, *, inner: bool = False) -> None:
        """Join the shared client instance; raises for an illegal or reserved group."""
        if self._instance is not None:
            return
        check_group(self.group)
        if not inner and self.group in ("DEFAULT_PRODUCER", CLIENT_INNER_PRODUCER):
            raise MessageValidationError("producerGroup can not equal DEFAULT_PRODUCER, please specify another one.")
        instance = await self.join_instance(self.config, lambda i: i.register_producer(self))
        self._instance = instance
        self.lookups = Lookups(instance)

    async def shutdown(self) -> None:
        """Wait for async sends in flight, unregister from the brokers and leave the instance."""
        instance, self._instance = self._instance, None
        if instance is None:
            return
        if self._accumulator is not None:
            await self._accumulator.close()
        if self._pending:
            await asyncio.wait(list(self._pending), timeout=self.config.send_msg_timeout_ms / 1000)
        if self._tracer is not None:
            await self._tracer.close()
        await instance.unregister(producer_group=self.group)
        await instance.release()

    def publish_topics(self) -> set[str]:
        return set(self._topics)

    def register_send_message_hook(self, hook: SendMessageHook) -> None:
        """Call `hook.send_message_before/after(context)` around every send request
        (DefaultMQProducerImpl.registerSendMessageHook); see hooks.py. From then on each
        message travels in a request of its own (no natural batching), so that a context
        describes the message the caller sent."""
        if not isinstance(hook, SendMessageHook):
            raise ClientError("a send message hook needs hook_name, send_message_before and send_message_after")
        self.send_hooks.append(hook)

    # --- sending --------------------------------------------------------------------

    async def send(
        self,
        msg: Message | Sequence[Message],
        *,
        selector: QueueSelector | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
        timeout: float | None = None,
    ) -> SendResult:
        """Send and wait until the broker stored the message (or the batch) or every attempt failed.

        Raises `MessageValidationError` for bad input, `BrokerError` with the
        broker's code and remark, `RemotingError` for connection failures and
        `RequestTimeout` when the send timeout ran out.
        """
        if self._coalesce(msg, selector, queue):
            return await self._accumulate(msg, timeout)
        return await self._send(msg, selector, arg, queue, timeout, self.config.retry_times_when_send_failed)

    def send_async(
        self,
        msg: Message | Sequence[Message],
        callback: SendCallback | None = None,
        *,
        selector: QueueSelector | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
        timeout: float | None = None,
    ) -> asyncio.Future[SendResult]:
        """Start a send and return at once; await the future, or pass `callback(result, exc)`.

        Failed attempts are retried `retry_times_when_send_async_failed` times.
        The callback runs on the event loop exactly once.
        """
        fut: asyncio.Future[SendResult]
        if self._coalesce(msg, selector, queue):
            fut = asyncio.ensure_future(self._accumulate(msg, timeout))
        else:
            coro = self._send(msg, selector, arg, queue, timeout, self.config.retry_times_when_send_async_failed)
            fut = asyncio.ensure_future(coro)
        self._pending.add(fut)
        fut.add_done_callback(self._pending.discard)
        if callback is not None:
            def done(f: asyncio.Future[SendResult]) -> None:
                if f.cancelled():
                    callback(None, asyncio.CancelledError())
                elif f.exception() is not None:
                    callback(None, f.exception())
                else:
                    callback(f.result(), None)
            fut.add_done_callback(done)
        return fut

    async def send_oneway(
        self, msg: Message | Sequence[Message], *, selector: QueueSelector | None = None, arg: Any = None,
        queue: MessageQueue | None = None,
    ) -> None:
        """Send without waiting for the broker; delivery is not confirmed and nothing is retried."""
        if otel.INSTALLED and (tracer := otel.tracer()) is not None:
            with otel.sending(tracer, self.group, msg):
                return await self._send_oneway(msg, selector, arg, queue)
        return await self._send_oneway(msg, selector, arg, queue)

    async def _send_oneway(self, msg: Message | Sequence[Message], selector: QueueSelector | None, arg: Any,
                           queue: MessageQueue | None) -> None:
        batch, msgs, encoded = self._prepare(msg)
        info_queues = await self._queues(msgs[0].topic)
        mq = queue or (selector(info_queues, msg, arg) if selector else None)
        if mq is None:
            publish = await self.instance.publish_info(msgs[0].topic, self.config.create_topic_key,
                                                       self.config.default_topic_queue_nums)
            mq = self._fault.select(publish.queues, publish.counter, None)
        code, fields, body, _ = self._request(batch, msgs, mq, encoded)
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        if otel.INSTALLED:
            otel.note_broker(addr)
        if not self.send_hooks:
            await self.instance.api.send_oneway(addr, code, fields, body)
            return
        context = SendMessageContext(self.group, msgs if batch else msgs[0], mq, addr, "ONEWAY", _msg_type(msgs[0]))
        run_send_hooks(self.send_hooks, True, context)
        try:
            await self.instance.api.send_oneway(addr, code, fields, body)
        except Exception as exc:
            context.exception = exc
            raise
        finally:
            run_send_hooks(self.send_hooks, False, context)

    async def send_batches(self, msgs: Sequence[Message], *, timeout: float | None = None) -> list[SendResult]:
        """Send a list of any size as consecutive batches of at most `max_message_size` bytes."""
        results = []
        for part in split_batches(check_batch(msgs), self.config.max_message_size):
            results.append(await self.send(part, timeout=timeout))
        return results

    async def request(
        self, msg: Message, timeout: float = 3.0, *, selector: QueueSelector | None = None, arg: Any = None,
        queue: MessageQueue | None = None,
    ) -> MessageExt:
        """Send `msg` as a request and return the reply to it (request-reply; see `request_reply`).

        Raises `RequestReplyTimeout` when no reply came within `timeout` seconds.
        """
        return await request_reply.request(self, msg, timeout, selector=selector, arg=arg, queue=queue)

    def request_async(
        self, msg: Message, callback: request_reply.RequestCallback | None = None, timeout: float = 3.0, *,
        selector: QueueSelector | None = None, arg: Any = None, queue: MessageQueue | None = None,
    ) -> asyncio.Future[MessageExt]:
        """Start a request; await the future for the reply, or pass `callback(reply, exc)`."""
        return request_reply.request_async(self, msg, callback, timeout, selector=selector, arg=arg, queue=queue)

    # --- internals ------------------------------------------------------------------------

    def _coalesce(self, msg: Message | Sequence[Message], selector: QueueSelector | None,
                  queue: MessageQueue | None) -> TypeGuard[Message]:
        """Whether this send goes through the accumulator (a plain single message, no queue chosen)."""
        return (self._accumulator is not None and selector is None and queue is None and isinstance(msg, Message)
                and not self.send_hooks and coalescable(msg, self.config.compress_msg_body_over_howmuch))

    async def _accumulate(self, msg: Message, timeout: float | None) -> SendResult:
        assert self._accumulator is not None
        if otel.INSTALLED and (tracer := otel.tracer()) is not None:
            with otel.sending(tracer, self.group, msg) as span:  # the context goes in before the size estimate
                self._prepare(msg)
                result = await self._accumulator.send(msg, timeout)
                otel.sent(span, msg, result)
                return result
        self._prepare(msg)  # validation errors reach this caller at once, as for any send
        return await self._accumulator.send(msg, timeout)

    async def _send_single(self, msg: Message, timeout: float | None) -> SendResult:
        """A coalescable message that found no company: the ordinary single send."""
        return await self._send_prepared(False, [msg], None, msg, None, None, timeout,
                                         self.config.retry_times_when_send_failed)

    async def _send_coalesced(self, msgs: list[Message], timeout: float | None) -> SendResult:
        """Validated messages of one topic as one batch (the accumulator splits the result)."""
        if otel.INSTALLED and (tracer := otel.tracer()) is not None:
            with otel.sending_batch(tracer, self.group, msgs) as span:
                result = await self._send_prepared(True, msgs, encode_batch(msgs), msgs, None, None, timeout,
                                                   self.config.retry_times_when_send_failed)
                otel.sent(span, msgs, result)
                return result
        return await self._send_prepared(True, msgs, encode_batch(msgs), msgs, None, None, timeout,
                                         self.config.retry_times_when_send_failed)

    def _prepare(self, msg: Message | Sequence[Message]) -> tuple[bool, list[Message], list[bytes] | None]:
        """Validate, assign unique ids; returns (is_batch, messages, encoded batch body or None)."""
        if isinstance(msg, Message):
            check_message(msg, self.config.max_message_size)
            if not msg.unique_key:
                msg.unique_key = self._ids.next()
            self._topics.add(msg.topic)
            return False, [msg], None
        msgs = check_batch(msg)  # one topic for all, so its name is checked once
        check_message(msgs[0], self.config.max_message_size)
        for m in msgs:
            check_body(m, self.config.max_message_size)
            if not m.unique_key:
                m.unique_key = self._ids.next()
        encoded = encode_batch(msgs)
        total = sum(len(part) for part in encoded)
        if total > self.config.max_message_size:
            raise MessageValidationError(
                f"the batch is {total} bytes, over the limit of {self.config.max_message_size}; use send_batches()"
            )
        self._topics.add(msgs[0].topic)
        return True, msgs, encoded

    async def _queues(self, topic: str) -> list[MessageQueue]:
        info = await self.instance.publish_info(topic, self.config.create_topic_key,
                                                self.config.default_topic_queue_nums)
        return info.queues

    async def _send(
        self,
        msg: Message | Sequence[Message],
        selector: QueueSelector | None,
        arg: Any,
        queue: MessageQueue | None,
        timeout: float | None,
        retries: int,
    ) -> SendResult:
        if otel.INSTALLED and (tracer := otel.tracer()) is not None:
            with otel.sending(tracer, self.group, msg) as span:  # the context goes in before encoding
                batch, msgs, encoded = self._prepare(msg)
                result = await self._send_prepared(batch, msgs, encoded, msg, selector, arg, timeout, retries, queue)
                otel.sent(span, msg, result)
                return result
        batch, msgs, encoded = self._prepare(msg)
        return await self._send_prepared(batch, msgs, encoded, msg, selector, arg, timeout, retries, queue)

    async def _send_prepared(
        self,
        batch: bool,
        msgs: list[Message],
        encoded: list[bytes] | None,
        msg: Message | Sequence[Message],
        selector: QueueSelector | None,
        arg: Any,
        timeout: float | None,
        retries: int,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        timeout_s = (self.config.send_msg_timeout_ms / 1000) if timeout is None else timeout
        deadline = time.monotonic() + timeout_s
        topic = msgs[0].topic
        if queue is not None or selector is not None:
            mq = queue if queue is not None else selector(await self._queues(topic), msg, arg)  # type: ignore[misc]
            return await self._attempt(batch, msgs, mq, deadline, encoded)
        publish = await self.instance.publish_info(topic, self.config.create_topic_key,
                                                   self.config.default_topic_queue_nums)
        last_broker: str | None = None
        last_error: BaseException | None = None
        result: SendResult | None = None
        for _ in range(1 + max(retries, 0)):
            if time.monotonic() >= deadline:
                break
            mq = self._fault.select(publish.queues, publish.counter, last_broker)
            last_broker = mq.broker_name
            started = time.monotonic()
            try:
                result = await self._attempt(batch, msgs, mq, deadline, encoded)
            except OrbitMQError as exc:
                # The exception's class says whether another broker may succeed (errors.py).
                if isinstance(exc, (RemotingError, BrokerError)):
                    self._fault.record(mq.broker_name, _elapsed_ms(started), isolation=True)
                if isinstance(exc, RemotingError) or getattr(exc, "code", None) == ResponseCode.SERVICE_NOT_AVAILABLE:
                    self.instance.refresh_route_soon(topic)
                if not exc.retriable:
                    raise
                last_error = exc
                continue
            self._fault.record(mq.broker_name, _elapsed_ms(started), isolation=False)
            if result.status is not SendStatus.SEND_OK and self.config.retry_another_broker_when_not_store_ok:
                continue
            return result
        if result is not None:
            return result
        if last_error is not None:
            raise last_error
        raise RequestTimeout(f"send to topic {topic} timed out after {timeout_s}s")

    def _request(
        self, batch: bool, msgs: list[Message], mq: MessageQueue, encoded: list[bytes] | None = None
    ) -> tuple[int, dict[str, str], list[bytes] | bytes, str]:
        """(request code, V2 header, body, client msg id) for one attempt on `mq`.

        `encoded` is the batch body when `_prepare` already built it (it is the same for every attempt).
        """
        if batch:
            props: dict[str, str] = {mc.WAIT_STORE_MSG_OK: "true" if msgs[0].wait_store_msg_ok else "false"}
            body: list[bytes] | bytes = encoded if encoded is not None else encode_batch(msgs)
            sys_flag = 0
            flag = 0
            msg_id = ",".join(m.unique_key or "" for m in msgs)
        else:
            msg = msgs[0]
            props = dict(msg.properties)
            body = msg.body
            sys_flag = 0
            flag = msg.flag
            if len(body) >= self.config.compress_msg_body_over_howmuch:
                try:
                    body = zlib.compress(body, self.config.compress_level)
                    sys_flag |= COMPRESSED
                except zlib.error:
                    body = msg.body  # as Java: send uncompressed without the flag
            if props.get(mc.TRANSACTION_PREPARED) == "true":
                sys_flag |= TRANSACTION_PREPARED_TYPE
            msg_id = msg.unique_key or ""
        header = SendMessageRequestHeader(
            producer_group=self.group,
            topic=mq.topic,
            default_topic=self.config.create_topic_key,
            default_topic_queue_nums=self.config.default_topic_queue_nums,
            queue_id=mq.queue_id,
            sys_flag=sys_flag,
            born_timestamp=int(time.time() * 1000),
            flag=flag,
            reconsume_times=0,
            unit_mode=False,
            batch=batch,
            bname=mq.broker_name,
        )
        if names.is_retry_topic(mq.topic):
            # Retry bookkeeping travels in the header, not in the stored properties.
            reconsume = props.pop(mc.RECONSUME_TIME, None)
            if reconsume is not None:
                header.reconsume_times = parse_int(reconsume, mc.RECONSUME_TIME)
            max_times = props.pop(mc.MAX_RECONSUME_TIMES, None)
            if max_times is not None:
                header.max_reconsume_times = parse_int(max_times, mc.MAX_RECONSUME_TIMES)
        header.properties = mc.encode_properties(props)
        fields = header.to_compact_fields()
        code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
        if not batch and request_reply.is_reply(props):
            code = RequestCode.SEND_REPLY_MESSAGE_V2  # the broker pushes it to the requester (§6.9)
        return code, fields, body, msg_id

    async def _attempt(
        self, batch: bool, msgs: list[Message], mq: MessageQueue, deadline: float, encoded: list[bytes] | None
    ) -> SendResult:
        started = time.monotonic()
        code, fields, body, msg_id = self._request(batch, msgs, mq, encoded)
        addr = await self.instance.find_master_addr(mq.broker_name, mq.topic)
        if otel.INSTALLED:
            otel.note_broker(addr)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RequestTimeout("send timed out before the request was made")
        context: SendMessageContext | None = None
        if self.send_hooks:
            context = SendMessageContext(self.group, msgs if batch else msgs[0], mq, addr, "SYNC", _msg_type(msgs[0]))
            run_send_hooks(self.send_hooks, True, context)
        try:
            resp = await self.instance.api.send(addr, code, fields, body, remaining)
            status = SEND_STATUS_BY_CODE.get(resp.code)
            if status is None:
                raise BrokerError.for_code(resp.code, resp.remark)
            header = SendMessageResponseHeader.from_ext_fields(resp.ext_fields)
        except Exception as exc:
            if context is not None:  # Java's sendKernelImpl: the after hooks see the failure too
                context.exception = exc
                run_send_hooks(self.send_hooks, False, context)
            raise
        result = SendResult(
            status=status,
            msg_id=msg_id,
            offset_msg_id=header.msg_id,
            message_queue=MessageQueue(mq.topic, mq.broker_name, header.queue_id),
            queue_offset=header.queue_offset,
            region_id=header.msg_region or "DefaultRegion",
            trace_on=resp.field("TRACE_ON") != "false",  # as Java reads it: only "false" turns tracing off
            recall_handle=resp.field("recallHandle") or "",
        )
        if self._tracer is not None and not batch:
            self._tracer.sent(msgs[0], result, addr, started)  # buffered; sent by the trace dispatcher
        if context is not None:
            context.send_result = result
            run_send_hooks(self.send_hooks, False, context)
        return result

    # --- lookups and administration ------------------------------------------------------------

    async def create_topic(self, key: str, new_topic: str, queue_num: int, topic_sys_flag: int = 0) -> None:
        """Create `new_topic` with `queue_num` queues on the brokers serving template topic `key`."""
        await self.lookups.create_topic(key, new_topic, queue_num, topic_sys_flag)

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The queues `topic` can be written to (after a fresh route lookup)."""
        await self.instance.update_route(topic)
        return list(await self._queues(topic))

    async def min_offset(self, mq: MessageQueue) -> int:
        return await self.lookups.min_offset(mq)

    async def max_offset(self, mq: MessageQueue) -> int:
        return await self.lookups.max_offset(mq)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return await self.lookups.search_offset(mq, timestamp_ms)

    async def recall_message(self, topic: str, recall_handle: str) -> str:
        """Cancel a timed message before it is due by the `recall_handle` its send returned
        (RocketMQ 5.3's RECALL_MESSAGE); returns the message id. The broker refuses (604) a
        handle that is malformed, of another topic, or of a message already due."""
        broker_name = parse_recall_handle(recall_handle)[1]
        addr = await self.instance.find_master_addr(broker_name, topic)
        fields = {"producerGroup": self.group, "topic": topic, "recallHandle": recall_handle, "bname": broker_name}
        resp = await self.instance.api.invoke(addr, RequestCode.RECALL_MESSAGE, fields)
        if resp.code != ResponseCode.SUCCESS:
            raise BrokerError.for_code(resp.code, resp.remark)
        return resp.field("msgId") or ""

    async def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        return await self.lookups.earliest_msg_store_time(mq)

    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        return await self.lookups.view_message(msg_id, topic)

    async def query_message(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int) -> list[MessageExt]:
        return await self.lookups.query_message(topic, key, max_num, begin_ms, end_ms)


async def start_inner_producer(config: ClientConfig) -> Producer:
    """The producer a client instance keeps for resending failed messages (`ClientInstance.inner_producer`).

    It joins the instance of `config` (same client id), so it sends over that
    instance's connections and signs with its ACL keys.
    """
    producer = Producer(CLIENT_INNER_PRODUCER, namesrv_addr=config.namesrv_addr, instance_name=config.instance_name,
                        client_ip=config.client_ip, unit_name=config.unit_name)
    await producer.start(inner=True)
    return producer


def trace_producers(config: ClientConfig) -> Callable[[str], Producer]:
    """Makes a trace dispatcher's producer of `group`: its own client instance, signing like `config`."""
    def make(group: str) -> Producer:
        return Producer(group, namesrv_addr=config.namesrv_addr,
                        instance_name=f"orbitmq_trace_{os.getpid()}_{next(_trace_instances)}",
                        **acl_options(config))
    return make


_trace_instances = itertools.count()


def _msg_type(msg: Message) -> str:
    """RocketMQ's MessageType name of a message, for SendMessageContext.msg_type."""
    props = msg.properties
    if props.get(mc.TRANSACTION_PREPARED) == "true":
        return "Trans_Msg_Half"
    if props.get(mc.DELAY_TIME_LEVEL) or props.get(mc.TIMER_DELIVER_MS) or props.get(mc.TIMER_DELAY_MS):
        return "Delay_Msg"
    return "Normal_Msg"


def _elapsed_ms(started: float) -> int:
    return int((time.monotonic() - started) * 1000)
