"""Running user listeners: sync ones on a worker pool, async ones on the loop, both with a timeout.

A listener is `fn(msgs)` returning a consume result; it may be a plain
function (run on the consumer's thread pool so it never blocks the event
loop) or a coroutine function (awaited on the loop). An exception, a missing
result or a timeout counts as "consume later", as in RocketMQ: the message is
redelivered, never lost, and the exception text (or the timeout) is kept in
the message's ORBITMQ_LAST_ERROR property for the send-back and the DLQ tools.

A listener that takes a second positional parameter, `fn(msgs, context)`, is
also given the consume context (consume_context.py) and may set retry choices
on it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from orbitmq.client import otel
from orbitmq.client.hooks import (
    CONSUME_CONTEXT_TYPE,
    ConsumeMessageContext,
    ConsumeMessageHook,
    run_consume_hooks,
)
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt

log = logging.getLogger(__name__)

Listener = Callable[..., Any]
_OK = ("CONSUME_SUCCESS", "SUCCESS")  # str enums compare equal to their values


def takes_context(listener: Callable[..., Any]) -> bool:
    """True when `listener` accepts a second positional argument (the consume context)."""
    try:
        params = list(inspect.signature(listener).parameters.values())
    except (TypeError, ValueError):
        return False
    positional = 0
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            return True
        if param.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            positional += 1
    return positional >= 2


def record_error(msgs: list[MessageExt], text: str) -> None:
    for msg in msgs:
        msg.properties[mc.ORBITMQ_LAST_ERROR] = mc.error_text(text)


class _ConsumePool(ThreadPoolExecutor):
    """The worker pool of synchronous listeners; `prestart(n)` starts n threads at once
    (ThreadPoolExecutor starts them one by one as work comes; none ever stops before shutdown)."""

    def prestart(self, threads: int) -> None:
        for _ in range(threads):
            self._adjust_thread_count()  # a new thread each call while none is idle, up to the maximum


class ListenerRunner:
    def __init__(self, listener: Listener, workers: int, timeout_s: float, min_workers: int = 0) -> None:
        self.listener = listener
        self.is_async = inspect.iscoroutinefunction(listener)
        self.with_context = takes_context(listener)
        self.timeout_s = timeout_s
        self.executor: _ConsumePool | None = None
        if not self.is_async:
            self.executor = _ConsumePool(workers, thread_name_prefix="orbitmq-consume")
            self.executor.prestart(min(min_workers, workers))
        #: Consume hooks (hooks.py), called around each listener call; shared with the consumer.
        self.consume_hooks: list[ConsumeMessageHook] = []
        #: Orderly consumers answer SUSPEND_CURRENT_QUEUE_A_MOMENT for a failed call (the hooks' status).
        self.orderly = False
        # Async listeners get the same bound on concurrency that the pool gives sync ones.
        self.slots = asyncio.Semaphore(workers)
        #: Called after each call with (msgs, result or None, elapsed ms): the consumer's statistics.
        self.on_result: Callable[[list[MessageExt], Any, float], None] | None = None
        #: The consumer group, for the OpenTelemetry process spans (otel.py).
        self.group = ""

    async def run(self, msgs: list[MessageExt], context: object = None) -> Any | None:
        """The listener's result, or None when it raised or timed out (logged).

        `context` is passed as the second argument to listeners that take one.
        """
        if self.consume_hooks:
            return await self._run_hooked(msgs, context)
        return await self._run_observed(msgs, context)

    async def _run_hooked(self, msgs: list[MessageExt], context: object) -> Any | None:
        """`run` between the consume hooks' before and after calls (ConsumeMessageService's order)."""
        hook_context = ConsumeMessageContext(self.group, msgs, getattr(context, "message_queue", None))
        run_consume_hooks(self.consume_hooks, True, hook_context)
        started = time.monotonic()
        result = await self._run_observed(msgs, context)
        ok = result in _OK or result == "COMMIT"
        if result is None:
            if time.monotonic() - started >= self.timeout_s:
                kind = "TIME_OUT"
            else:  # run() records the error on the messages when the listener raised
                kind = "EXCEPTION" if mc.ORBITMQ_LAST_ERROR in msgs[0].properties else "RETURNNULL"
            result_text = "SUSPEND_CURRENT_QUEUE_A_MOMENT" if self.orderly else "RECONSUME_LATER"
        else:
            kind = "SUCCESS" if ok else "FAILED"
            result_text = str(getattr(result, "value", result))
        hook_context.status = result_text
        hook_context.success = ok
        hook_context.props[CONSUME_CONTEXT_TYPE] = kind
        run_consume_hooks(self.consume_hooks, False, hook_context)
        return result

    async def _run_observed(self, msgs: list[MessageExt], context: object) -> Any | None:
        if otel.INSTALLED and (tracer := otel.tracer()) is not None and otel.traced_topic(msgs[0].topic):
            with otel.processing(msgs, self.group, tracer) as span:
                result = await self._run(msgs, context, traced=True)
                otel.consumed(span, result in _OK, result)
                return result
        return await self._run(msgs, context)

    async def _run(self, msgs: list[MessageExt], context: object, traced: bool = False) -> Any | None:
        args: tuple[Any, ...] = (msgs, context) if self.with_context else (msgs,)
        now = str(int(time.time() * 1000))
        for msg in msgs:
            msg.properties[mc.CONSUME_START_TIMESTAMP] = now
            # The error of an earlier delivery is not this one's: a failure now records its own.
            msg.properties.pop(mc.ORBITMQ_LAST_ERROR, None)
        async with self.slots:
            started = time.monotonic()
            result: Any = None
            try:
                # asyncio.timeout rather than wait_for: no extra task per call, no lost cancellation.
                async with asyncio.timeout(self.timeout_s):
                    if self.is_async:
                        result = await self.listener(*args)
                    else:
                        loop = asyncio.get_running_loop()
                        # With tracing the listener runs in the process span's context.
                        fn = otel.in_context(self.listener) if traced else self.listener
                        result = await loop.run_in_executor(self.executor, fn, *args)
                return result
            except TimeoutError:
                record_error(msgs, f"listener timed out after {self.timeout_s:.0f} s")
                log.warning("listener took longer than %.0f s for %s; consuming them later",
                            self.timeout_s, [m.msg_id for m in msgs])
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                record_error(msgs, f"{type(exc).__name__}: {exc}")
                log.exception("listener raised for %s; consuming them later", [m.msg_id for m in msgs])
            finally:
                if self.on_result is not None:
                    self.on_result(msgs, result, (time.monotonic() - started) * 1000)
        return None

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(wait=False, cancel_futures=True)
