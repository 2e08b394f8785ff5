"""OpenTelemetry tracing: W3C trace context in message properties, messaging spans.

Active when `opentelemetry-api` is installed (the `orbitmq[otel]` extra) and a tracer provider
is set, globally (`opentelemetry.trace.set_tracer_provider`) or for OrbitMQ alone
(`set_tracer_provider` here). Otherwise the client's hooks cost one attribute test per send
or consumption (`INSTALLED`) and, with the API installed but no provider, one call that finds
no tracer.

Spans follow OpenTelemetry's messaging semantic conventions (messaging.system "rocketmq"):

* ``send <topic>`` (PRODUCER) for each message sent on its own, also through the producer's
  natural batching: its context goes into the message as the user properties `traceparent`
  (and `tracestate`), the W3C names.
* ``create <topic>`` (PRODUCER) for each message of an explicit batch, carrying its context,
  and one ``send <topic>`` (CLIENT) for the request, linked to them. A batch that natural
  batching formed is sent under a ``send <topic>`` (CLIENT) span linked to its messages' spans.
* ``receive <topic>`` (CLIENT) around a pull consumer's `pull()` and a lite pull consumer's
  `poll()` that returned messages, linked to the messages' contexts.
* ``process <topic>`` (CONSUMER) around a push consumer's listener, linked to each message's
  context. One message: the span is also a child of that context, so the producer's trace
  continues into the consumer (a message without context starts a new trace); several: a new
  trace.
  `processing()` gives pull users the same span.

Messages on system topics (retry, dead letter, trace, transaction half topics) keep the context
they already carry and get no spans of their own.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

from orbitmq import __version__
from orbitmq.common.message import Message, MessageExt

try:
    from opentelemetry import context as _context
    from opentelemetry import propagate as _propagate
    from opentelemetry import trace as _trace
    from opentelemetry.trace import Link, Span, SpanKind, StatusCode, Tracer
except ImportError:  # the otel extra is not installed: every hook is skipped on INSTALLED
    _trace = None  # type: ignore[assignment]

#: Whether opentelemetry-api is importable; the one test the client's hooks make when it is not.
INSTALLED: bool = _trace is not None
SYSTEM = "rocketmq"
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

T = TypeVar("T")
R = TypeVar("R")

_provider: Any = None
_tracer: Any = None


def _global_unset() -> bool:
    """No global tracer provider set (read without the environment lookup get_tracer_provider makes)."""
    return getattr(_trace, "_TRACER_PROVIDER", True) is None


#: How to tell that no global provider is set; the API's own call when OTEL_PYTHON_TRACER_PROVIDER
#: names one (it is made on first use) or when the API's private global is not there to read.
_GLOBAL_UNSET: Callable[[], bool] = (
    _global_unset if INSTALLED and "OTEL_PYTHON_TRACER_PROVIDER" not in os.environ
    and hasattr(_trace, "_TRACER_PROVIDER") else (lambda: False)
)


def set_tracer_provider(provider: Any) -> None:
    """Trace OrbitMQ's clients with `provider` rather than the global one; None: the global again."""
    global _provider, _tracer
    _provider, _tracer = provider, None


def tracer() -> Tracer | None:
    """The clients' tracer, or None when tracing is off (no API, or no tracer provider set)."""
    global _tracer
    if _tracer is not None or not INSTALLED:
        return _tracer  # type: ignore[no-any-return]
    if _provider is None and _GLOBAL_UNSET():
        return None  # the common case without tracing: no global provider yet, in about 100 ns
    provider = _provider if _provider is not None else _trace.get_tracer_provider()
    if isinstance(provider, (_trace.ProxyTracerProvider, _trace.NoOpTracerProvider)):
        return None  # no provider set yet: checked again next time
    _tracer = provider.get_tracer("orbitmq", __version__)
    return _tracer  # type: ignore[no-any-return]


def traced_topic(topic: str) -> bool:
    """System topics (retry, DLQ, message trace, half messages) get no spans and keep their context."""
    return not topic.startswith(("%", "RMQ_SYS_"))


# --- attributes -----------------------------------------------------------------------------------

def _base(operation: str, topic: str, group: str) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "messaging.system": SYSTEM,
        "messaging.operation.type": operation,
        "messaging.operation.name": operation,
        "messaging.destination.name": topic,
    }
    if group:
        attrs["messaging.rocketmq.client_group"] = group
    return attrs


def _consumer_base(operation: str, topic: str, group: str) -> dict[str, Any]:
    attrs = _base(operation, topic, group)
    if group:
        attrs["messaging.consumer.group.name"] = group  # the newer conventions' name for it
    return attrs


def _message_attributes(attrs: dict[str, Any], msg: Message) -> dict[str, Any]:
    msg_id = msg.msg_id if isinstance(msg, MessageExt) else msg.unique_key
    if msg_id:
        attrs["messaging.message.id"] = msg_id
    if msg.tags:
        attrs["messaging.rocketmq.message.tag"] = msg.tags
    keys = msg.keys
    if keys:
        attrs["messaging.rocketmq.message.keys"] = keys
    attrs["messaging.message.body.size"] = len(msg.body)
    if msg.delay_time_level:
        attrs["messaging.rocketmq.message.type"] = "delay"
        attrs["messaging.rocketmq.message.delay_time_level"] = msg.delay_time_level
    if isinstance(msg, MessageExt):
        attrs["messaging.destination.partition.id"] = str(msg.queue_id)
        if msg.reconsume_times:
            attrs["messaging.rocketmq.message.reconsume_times"] = msg.reconsume_times
    return attrs


def set_server_attrs(attrs: dict[str, Any], addr: str) -> dict[str, Any]:
    """server.address and server.port of a broker address "host:port"."""
    host, _, port = addr.rpartition(":")
    if host and port.isdigit():
        attrs["server.address"] = host
        attrs["server.port"] = int(port)
    return attrs


def note_broker(addr: str) -> None:
    """Record the broker a request goes to on the current span (the send or batch span)."""
    if _tracer is None:
        return
    span = _trace.get_current_span()
    if span.is_recording():
        span.set_attributes(set_server_attrs({}, addr))


# --- context in properties --------------------------------------------------------------------------

def inject(msg: Message) -> None:
    """Put the current context into `msg` as W3C `traceparent`/`tracestate` user properties."""
    _propagate.inject(msg.properties)


def context_properties(span: Span) -> dict[str, str]:
    """The `traceparent`/`tracestate` properties that make `span` the parent of a message's consumers."""
    carrier: dict[str, str] = {}
    _propagate.inject(carrier, context=_trace.set_span_in_context(span))
    return carrier


def start_task_span(tr: Tracer, operation: str, topic: str, group: str, kind: Any) -> Span:
    """A span for a whole Spark task's reading or writing of `topic` (ended by the caller)."""
    return tr.start_span(f"{operation} {topic}", kind=kind, attributes=_base(operation, topic, group))


def extract(msg: Message) -> Any:
    """The context `msg` carries (empty when it has none)."""
    if TRACEPARENT not in msg.properties:
        return _context.Context()
    return _propagate.extract(msg.properties, context=_context.Context())


def _links(msgs: Sequence[Message]) -> list[Link]:
    links = []
    for msg in msgs:
        if TRACEPARENT in msg.properties:
            sc = _trace.get_current_span(extract(msg)).get_span_context()
            if sc.is_valid:
                links.append(Link(sc))
    return links


# --- producer ---------------------------------------------------------------------------------------

@contextlib.contextmanager
def sending(tr: Tracer, group: str, msg: Message | Sequence[Message]) -> Iterator[Span]:
    """The span of one send request; the messages get their context before they are encoded."""
    msgs = [msg] if isinstance(msg, Message) else list(msg)
    topic = msgs[0].topic if msgs else ""
    if not traced_topic(topic):
        yield _trace.INVALID_SPAN
        return
    if isinstance(msg, Message):
        with tr.start_as_current_span(f"send {topic}", kind=SpanKind.PRODUCER,
                                      attributes=_base("send", topic, group)) as span:
            inject(msg)
            yield span
        return
    for m in msgs:
        with tr.start_as_current_span(f"create {topic}", kind=SpanKind.PRODUCER,
                                      attributes=_message_attributes(_base("create", topic, group), m)):
            inject(m)
    attrs = _base("send", topic, group)
    attrs["messaging.batch.message_count"] = len(msgs)
    with tr.start_as_current_span(f"send {topic}", kind=SpanKind.CLIENT, attributes=attrs,
                                  links=_links(msgs)) as span:
        yield span


@contextlib.contextmanager
def sending_batch(tr: Tracer, group: str, msgs: Sequence[Message]) -> Iterator[Span]:
    """The span of a batch that natural batching formed: a new trace linked to each message's send span."""
    topic = msgs[0].topic
    if not traced_topic(topic):
        yield _trace.INVALID_SPAN
        return
    attrs = _base("send", topic, group)
    attrs["messaging.batch.message_count"] = len(msgs)
    with tr.start_as_current_span(f"send {topic}", context=_context.Context(), kind=SpanKind.CLIENT,
                                  attributes=attrs, links=_links(msgs)) as span:
        yield span


def sent(span: Span, msg: Message | Sequence[Message], result: Any) -> None:
    """Note the outcome of a send on its span (message ids, queue, broker's verdict)."""
    if not span.is_recording():
        return
    if isinstance(msg, Message):
        span.set_attributes(_message_attributes({}, msg))
    span.set_attribute("messaging.destination.partition.id", str(result.message_queue.queue_id))
    span.set_attribute("messaging.rocketmq.send_status", result.status.name)
    if result.status.name != "SEND_OK":
        span.set_status(StatusCode.ERROR, result.status.name)


# --- consumers --------------------------------------------------------------------------------------

@contextlib.contextmanager
def processing(msgs: Sequence[MessageExt], group: str = "", tr: Tracer | None = None) -> Iterator[Span | None]:
    """The process span around handling `msgs`, current inside the block (None when tracing is off).

    Linked to each message's context; with one message also its child (a message without context
    starts a new trace). Several: a new trace.
    """
    tr = tr if tr is not None else tracer()
    if tr is None or not msgs:
        yield None
        return
    topic = msgs[0].topic
    attrs = _consumer_base("process", topic, group)
    # The conventions want a link to each message's creation context; with one message that
    # context may also be the parent, which keeps producer and consumer in one trace.
    if len(msgs) == 1:
        _message_attributes(attrs, msgs[0])
        parent = extract(msgs[0])
    else:
        attrs["messaging.batch.message_count"] = len(msgs)
        parent = _context.Context()
    if msgs[0].store_host:
        set_server_attrs(attrs, msgs[0].store_host)
    with tr.start_as_current_span(f"process {topic}", context=parent, kind=SpanKind.CONSUMER,
                                  attributes=attrs, links=_links(msgs)) as span:
        yield span


def consumed(span: Span | None, ok: bool, result: Any) -> None:
    """Mark a process span failed when the listener asked for redelivery, raised or timed out."""
    if not ok and span is not None and span.is_recording():
        span.set_status(StatusCode.ERROR, "consume later" if result is None else str(getattr(result, "name", result)))


def in_context(fn: Callable[..., T]) -> Callable[..., T]:
    """`fn` to run on a worker thread inside the current context (so its spans are children)."""
    return functools.partial(contextvars.copy_context().run, fn)


async def receiving(tr: Tracer, group: str, topic: str, call: Awaitable[R],
                    messages: Callable[[R], Sequence[MessageExt]]) -> R:
    """Await a pull or poll under a receive span linked to the messages it returned.

    A poll that returned nothing makes no span (`topic` "" means: the messages' topic).
    """
    start_ns = time.time_ns()
    try:
        result = await call
    except Exception as exc:
        if topic:
            _receive_span(tr, group, topic, [], start_ns, exc)
        raise
    msgs = messages(result)
    if topic or msgs:
        _receive_span(tr, group, topic or msgs[0].topic, msgs, start_ns, None)
    return result


def _receive_span(tr: Tracer, group: str, topic: str, msgs: Sequence[MessageExt], start_ns: int,
                  error: BaseException | None) -> None:
    attrs = _consumer_base("receive", topic, group)
    attrs["messaging.batch.message_count"] = len(msgs)
    if msgs and msgs[0].store_host:
        set_server_attrs(attrs, msgs[0].store_host)
    span = tr.start_span(f"receive {topic}", kind=SpanKind.CLIENT, attributes=attrs, links=_links(msgs),
                         start_time=start_ns)
    if error is not None:
        span.record_exception(error)
        span.set_status(StatusCode.ERROR, type(error).__name__)
    span.end()
