"""OpenTelemetry in tests: spans into the SDK's in-memory exporter, given to OrbitMQ alone.

`otel.set_tracer_provider` leaves the global provider unset, so the rest of the suite runs untraced.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orbitmq.client import otel


@contextmanager
def memory_tracing() -> Iterator[InMemorySpanExporter]:
    """Trace OrbitMQ's clients into an in-memory exporter for the length of the block."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.set_tracer_provider(provider)
    try:
        yield exporter
    finally:
        otel.set_tracer_provider(None)
        provider.shutdown()


def ids(span: ReadableSpan) -> tuple[int, int]:
    """(trace id, span id) of a finished span."""
    ctx = span.get_span_context()
    assert ctx is not None
    return ctx.trace_id, ctx.span_id
