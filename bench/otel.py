"""What OpenTelemetry tracing costs the client: off (no API), API without a provider, and on.

    python -m bench.otel [--messages N] [--no-e2e]

Micro: nanoseconds per call of the client's guard (`otel.INSTALLED and otel.tracer() is not None`,
what every send, pull and listener call evaluates) and of the traced paths (a send span with its
context injected into the message, a process span with the context extracted), with the SDK's
TracerProvider and a BatchSpanProcessor feeding an exporter that drops the spans.

End to end (unless --no-e2e): `orbitmq dev` in a child process, one `Producer` here sending N
1 KiB messages one at a time and N with 64 in flight, in each of the three states.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
import timeit
from collections.abc import Callable, Sequence
from typing import Any

from orbitmq.client import Message, Producer, otel
from orbitmq.common.message import MessageExt

STATES = ("not installed", "API, no provider", "SDK provider")


def set_state(state: str, provider: Any) -> None:
    otel.INSTALLED = state != "not installed"
    otel.set_tracer_provider(provider if state == "SDK provider" else None)


def sdk_provider() -> Any:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    return provider


def ns_per_call(fn: Callable[[], object], number: int) -> float:
    best = min(timeit.repeat(fn, number=number, repeat=5))
    return best / number * 1e9


def micro(provider: Any) -> None:
    print("micro (ns per call, best of 5)")

    def guard() -> object:
        return otel.INSTALLED and otel.tracer() is not None

    for state in STATES:
        set_state(state, provider)
        print(f"  guard, {state:<18} {ns_per_call(guard, 1_000_000):8.0f}")
    set_state("SDK provider", provider)
    tracer = otel.tracer()
    assert tracer is not None

    def send_span() -> None:
        msg = Message("BenchTopic", b"x" * 1024, tags="T")
        msg.unique_key = "7F0000010000000000000000000000AA"
        with otel.sending(tracer, "PG", msg):
            pass

    def bare_message() -> None:
        msg = Message("BenchTopic", b"x" * 1024, tags="T")
        msg.unique_key = "7F0000010000000000000000000000AA"

    carrier = Message("BenchTopic", b"x")
    otel.inject(carrier)
    received = MessageExt("BenchTopic", b"x" * 1024, 0, dict(carrier.properties), msg_id="AA")

    def process_span() -> None:
        with otel.processing([received], "CG", tracer):
            pass

    base = ns_per_call(bare_message, 20_000)
    print(f"  send span + inject (message creation {base:.0f} ns subtracted) "
          f"{ns_per_call(send_span, 20_000) - base:8.0f}")
    print(f"  process span + extract             {ns_per_call(process_span, 20_000):8.0f}")
    set_state("not installed", None)


async def e2e_run(namesrv: str, topic: str, n: int) -> tuple[float, float]:
    body = b"x" * 1024
    async with Producer("otel_bench_pg", namesrv_addr=namesrv, auto_batch=False) as producer:
        await producer.send(Message(topic, body))  # route and connection
        started = time.perf_counter()
        for _ in range(n):
            await producer.send(Message(topic, body))
        sequential = n / (time.perf_counter() - started)
        started = time.perf_counter()
        pending: set[asyncio.Future[Any]] = set()
        for _ in range(n):
            if len(pending) >= 64:
                _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            pending.add(producer.send_async(Message(topic, body)))
        await asyncio.gather(*pending)
        pipelined = n / (time.perf_counter() - started)
    return sequential, pipelined


def e2e(provider: Any, n: int) -> None:
    from bench.e2e import dev_flags, server_addresses
    from orbitmq.admin.api import AdminClient
    from orbitmq.admin.models import TopicConfig
    from tests.support.procs import orbitmq_command, start_server

    with tempfile.TemporaryDirectory(prefix="orbitmq-bench-") as tmp:
        server = start_server(orbitmq_command("dev", *dev_flags(tmp)), listeners=2, cwd=tmp)
        try:
            namesrv, broker = server_addresses(server.output)

            async def setup() -> None:
                async with AdminClient([namesrv]) as admin:
                    await admin.create_topic(broker, TopicConfig("OtelBench", 8, 8))

            asyncio.run(setup())
            print(f"end to end ({n} sends of 1 KiB each way; msgs/s; load average {os.getloadavg()[0]:.2f})")
            for state in STATES:
                set_state(state, provider)
                seq, pipe = asyncio.run(e2e_run(namesrv, "OtelBench", n))
                print(f"  {state:<18} sequential {seq:8.0f}   64 in flight {pipe:8.0f}")
        finally:
            set_state("not installed", None)
            server.stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--messages", type=int, default=5000)
    p.add_argument("--no-e2e", action="store_true")
    a = p.parse_args()
    if not otel.INSTALLED:
        raise SystemExit("bench.otel needs opentelemetry-api and opentelemetry-sdk (pip install 'orbitmq[test]')")
    provider = sdk_provider()
    try:
        micro(provider)
        if not a.no_e2e:
            e2e(provider, a.messages)
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
