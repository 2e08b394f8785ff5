"""The blocking facade: the asyncio clients driven from ordinary threads.

    from orbitmq.client.sync import Producer, PushConsumer
    producer = Producer("PG", namesrv_addr="127.0.0.1:9876")
    producer.start()
    result = producer.send(Message("T", b"hello"))
    producer.shutdown()

All blocking clients of a process run on one event loop in one background
daemon thread (so they share one client instance, as Java clients of one
process do). Each method submits the matching coroutine to that loop and
waits for its result; exceptions come through unchanged. Push-consumer
listeners should be plain functions here: they run on the consumer's worker
pool, never on the caller's thread. Do not call these methods from inside
the background loop itself (for example from an async listener).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any, Self, TypeVar, Unpack

from orbitmq.client import lite_pull_consumer as _lite
from orbitmq.client import producer as _producer
from orbitmq.client import pull_consumer as _pull
from orbitmq.client import push_consumer as _push
from orbitmq.client import transaction_producer as _tx
from orbitmq.client.config import ConsumerOptions, ProducerOptions, PushConsumerOptions
from orbitmq.client.hooks import ConsumeMessageHook, SendMessageHook
from orbitmq.client.listener import Listener
from orbitmq.client.message_selector import MessageSelector
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import PullResult, SendResult
from orbitmq.client.selector import QueueSelector
from orbitmq.common.message import Message, MessageExt

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """The process-wide loop of the blocking clients, started on first use."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            from orbitmq.remoting.loop import loop_factory

            loop = loop_factory()()
            ready = threading.Event()

            def run() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=run, name="orbitmq-client-loop", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


def _call(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    loop = background_loop()
    try:
        if asyncio.get_running_loop() is loop:
            coro.close()
            raise RuntimeError("blocking client methods cannot be called from the client loop itself")
    except RuntimeError as exc:
        if "client loop" in str(exc):
            raise
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout)


def _on_loop(fn: Callable[[], T]) -> T:
    """Run a plain callable on the loop thread (object construction needing a running loop)."""
    async def wrap() -> T:
        return fn()
    return _call(wrap())


class Producer:
    """Blocking twin of `orbitmq.client.Producer`."""

    def __init__(self, group: str = "DEFAULT_PRODUCER", **options: Unpack[ProducerOptions]) -> None:
        self._p = _producer.Producer(group, **options)

    def start(self) -> None:
        _call(self._p.start())

    def shutdown(self) -> None:
        _call(self._p.shutdown())

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def send(self, msg: Message | Sequence[Message], *, selector: QueueSelector | None = None, arg: Any = None,
             queue: MessageQueue | None = None, timeout: float | None = None) -> SendResult:
        return _call(self._p.send(msg, selector=selector, arg=arg, queue=queue, timeout=timeout))

    def send_async(
        self, msg: Message | Sequence[Message],
        callback: Callable[[SendResult | None, BaseException | None], Any] | None = None, *,
        selector: QueueSelector | None = None, arg: Any = None, queue: MessageQueue | None = None,
    ) -> concurrent.futures.Future[SendResult]:
        """Returns a concurrent.futures.Future at once; `callback(result, exc)` runs on the client loop."""
        async def go() -> SendResult:
            return await self._p.send_async(msg, callback, selector=selector, arg=arg, queue=queue)
        return asyncio.run_coroutine_threadsafe(go(), background_loop())

    def send_oneway(self, msg: Message | Sequence[Message], *, selector: QueueSelector | None = None,
                    arg: Any = None, queue: MessageQueue | None = None) -> None:
        _call(self._p.send_oneway(msg, selector=selector, arg=arg, queue=queue))

    def send_batches(self, msgs: Sequence[Message]) -> list[SendResult]:
        return _call(self._p.send_batches(msgs))

    def register_send_message_hook(self, hook: SendMessageHook) -> None:
        """The hook runs on the client loop's thread (see `orbitmq.client.hooks`)."""
        self._p.register_send_message_hook(hook)

    def create_topic(self, key: str, new_topic: str, queue_num: int, topic_sys_flag: int = 0) -> None:
        _call(self._p.create_topic(key, new_topic, queue_num, topic_sys_flag))

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        return _call(self._p.fetch_publish_message_queues(topic))

    def min_offset(self, mq: MessageQueue) -> int:
        return _call(self._p.min_offset(mq))

    def max_offset(self, mq: MessageQueue) -> int:
        return _call(self._p.max_offset(mq))

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return _call(self._p.search_offset(mq, timestamp_ms))

    def earliest_msg_store_time(self, mq: MessageQueue) -> int:
        return _call(self._p.earliest_msg_store_time(mq))

    def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        return _call(self._p.view_message(msg_id, topic))

    def query_message(self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int) -> list[MessageExt]:
        return _call(self._p.query_message(topic, key, max_num, begin_ms, end_ms))

    def request(self, msg: Message, timeout: float = 3.0, *, selector: QueueSelector | None = None,
                arg: Any = None, queue: MessageQueue | None = None) -> MessageExt:
        """Send a request and block until its reply (`RequestReplyTimeout` after `timeout` seconds)."""
        return _call(self._p.request(msg, timeout, selector=selector, arg=arg, queue=queue))


class TransactionProducer(Producer):
    """Blocking twin of `orbitmq.client.TransactionProducer`; the listener runs on the client loop's thread."""

    def __init__(self, group: str = "DEFAULT_PRODUCER", listener: _tx.TransactionListener | None = None, *,
                 check_executor: concurrent.futures.Executor | None = None,
                 **options: Unpack[ProducerOptions]) -> None:
        self._tp = _tx.TransactionProducer(group, listener, check_executor=check_executor, **options)
        self._p = self._tp

    def send_message_in_transaction(self, msg: _tx.Message, arg: Any = None) -> _tx.TransactionSendResult:
        return _call(self._tp.send_message_in_transaction(msg, arg))


class PushConsumer:
    """Blocking twin of `orbitmq.client.PushConsumer`; listeners run on its worker threads."""

    def __init__(self, group: str = "DEFAULT_CONSUMER", **options: Unpack[PushConsumerOptions]) -> None:
        self._c = _push.PushConsumer(group, **options)

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        self._c.subscribe(topic, expression)

    def register_listener(self, listener: Listener) -> None:
        self._c.register_listener(listener)

    def register_orderly_listener(self, listener: Listener) -> None:
        self._c.register_orderly_listener(listener)

    def register_consume_message_hook(self, hook: ConsumeMessageHook) -> None:
        """The hook runs on the client loop's thread (see `orbitmq.client.hooks`)."""
        self._c.register_consume_message_hook(hook)

    def start(self) -> None:
        _call(self._c.start())

    def shutdown(self) -> None:
        _call(self._c.shutdown())

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()


class PullConsumer:
    """Blocking twin of `orbitmq.client.PullConsumer`."""

    def __init__(self, group: str, **options: Unpack[ConsumerOptions]) -> None:
        self._c = _pull.PullConsumer(group, **options)

    def start(self) -> None:
        _call(self._c.start())

    def shutdown(self) -> None:
        _call(self._c.shutdown())

    def fetch_subscribe_message_queues(self, topic: str) -> list[MessageQueue]:
        return _call(self._c.fetch_subscribe_message_queues(topic))

    def pull(self, mq: MessageQueue, expression: str | MessageSelector, offset: int, max_nums: int) -> PullResult:
        return _call(self._c.pull(mq, expression, offset, max_nums))

    def pull_block_if_not_found(
        self, mq: MessageQueue, expression: str | MessageSelector, offset: int, max_nums: int
    ) -> PullResult:
        return _call(self._c.pull_block_if_not_found(mq, expression, offset, max_nums))

    def update_consume_offset(self, mq: MessageQueue, offset: int) -> None:
        _call(self._c.update_consume_offset(mq, offset))

    def fetch_consume_offset(self, mq: MessageQueue, from_store: bool = True) -> int:
        return _call(self._c.fetch_consume_offset(mq, from_store))

    def max_offset(self, mq: MessageQueue) -> int:
        return _call(self._c.max_offset(mq))

    def min_offset(self, mq: MessageQueue) -> int:
        return _call(self._c.min_offset(mq))


class LitePullConsumer:
    """Blocking twin of `orbitmq.client.LitePullConsumer`."""

    def __init__(self, group: str, **options: Unpack[ConsumerOptions]) -> None:
        self._c: _lite.LitePullConsumer = _on_loop(lambda: _lite.LitePullConsumer(group, **options))

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        self._c.subscribe(topic, expression)

    def assign(self, mqs: Iterable[MessageQueue]) -> None:
        items = list(mqs)
        _on_loop(lambda: self._c.assign(items))

    def start(self) -> None:
        _call(self._c.start())

    def shutdown(self) -> None:
        _call(self._c.shutdown())

    def poll(self, timeout: float | None = None) -> list[MessageExt]:
        return _call(self._c.poll(timeout))

    def commit_sync(self) -> None:
        _call(self._c.commit_sync())

    def seek(self, mq: MessageQueue, offset: int) -> None:
        _call(self._c.seek(mq, offset))

    def committed(self, mq: MessageQueue) -> int:
        return _call(self._c.committed(mq))

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        return _call(self._c.fetch_message_queues(topic))


__all__ = ["LitePullConsumer", "Producer", "PullConsumer", "PushConsumer", "background_loop"]
