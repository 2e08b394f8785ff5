"""Scrape time of a large broker, and what the metrics counters cost the send path.

    python -m bench.metrics [--topics 1000] [--queues 8] [--groups 200] [--topics-per-group 5]
                            [--per-queue 4] [--scrapes 10] [--rounds 200] [--repeat 5]

Scrape: an embedded `Broker` (temp store) gets `topics` x `queues` queues with
`per-queue` messages each, `groups` consumer groups each committed on
`topics-per-group` topics (every queue one message in, so every queue lags),
half of them with a pull offset further on, and traffic counters for every
topic and group. Then the whole `/metrics` body is rendered `scrapes` times as
the endpoint does (`orbitmq.metrics.render`, the text format 0.0.4): the first scrape (store times read) and the rest (cached).

Send path: `bench.broker_cpu`'s send workload (64 SEND_MESSAGE_V2 frames per
read straight into a server connection), process CPU per message, the fastest
of `repeat` runs, alternately with the broker's metrics counters as shipped
("on") and with them cut back to what the broker counted before metrics
existed ("off": put/get totals only, no per-topic table, no latency buckets).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

from bench.broker_cpu import CollectingTransport, feed, send_reads
from bench.e2e import QUEUES, TOPIC
from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.broker.stats import BrokerStats
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.common.msgid import UniqueIdGenerator
from orbitmq.common.names import PERM_READ, PERM_WRITE
from orbitmq.metrics import BrokerMetrics, render
from orbitmq.remoting.loop import run as run_loop


def _config(tmp: str) -> BrokerConfig:
    return BrokerConfig.from_properties({
        "listenHost": "127.0.0.1", "listenPort": "0", "brokerIP1": "127.0.0.1", "fastChannelEnable": "false",
        "storePathRootDir": os.path.join(tmp, "store"), "mappedFileSizeCommitLog": str(256 << 20),
        "mappedFileSizeConsumeQueue": str(8 * 20 * 1024), "flushDiskType": "ASYNC_FLUSH", "namesrvAddr": "",
    })


async def build_state(broker: Broker, args: argparse.Namespace) -> None:
    store = broker.store
    assert store is not None
    topics = [f"BenchMetrics_{t:04d}" for t in range(args.topics)]
    now = int(time.time() * 1000)
    for t, topic in enumerate(topics):
        broker.topics.ensure(topic, args.queues, PERM_READ | PERM_WRITE)
        for q in range(args.queues):
            for i in range(args.per_queue):
                msg = MessageExtBrokerInner(
                    topic=topic, body=b"m" * 256, queue_id=q, born_timestamp=now, born_host="127.0.0.1:1",
                    store_host="127.0.0.1:10911",
                )
                msg.properties = {mc.TAGS: "T"}
                msg.refresh_properties_string()
                result = await store.put_message(msg)
                assert result.is_ok
        broker.stats.record_put(args.queues * args.per_queue, topic, args.queues * args.per_queue * 256)
    for g in range(args.groups):
        group = f"bench_metrics_group_{g:03d}"
        for k in range(args.topics_per_group):
            topic = topics[(g * args.topics_per_group + k) % len(topics)]
            for q in range(args.queues):
                broker.offsets.commit(group, topic, q, 1)
                if g % 2 == 0:
                    broker.stats.record_get(group, topic, 2, 512, q, 3)
    for code in (10, 11, 310, 320, 34, 14, 15, 38):
        broker.stats.record_rpc(code, 0, 0.5)


def scrape_times(broker: Broker, scrapes: int) -> tuple[list[float], int, int]:
    sources = [BrokerMetrics(broker)]
    times = []
    body = b""
    for _ in range(scrapes):
        t0 = time.perf_counter()
        body = render(sources)
        times.append((time.perf_counter() - t0) * 1000)
    series = sum(1 for line in body.splitlines() if line and not line.startswith(b"#"))
    return times, series, len(body)


class _Bare(BrokerStats):
    """What BrokerStats counted on the request path before the metrics counters."""

    def record_put(self, count: int, topic: str = "", size: int = 0, message_type: str = "normal") -> None:
        self.put_total += count

    def record_rpc(self, request_code: int, response_code: int, elapsed_ms: float) -> None:
        pass


async def send_cost(args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="orbitmq-metrics-send-") as tmp:
        broker = Broker(_config(tmp))
        await broker.start()
        try:
            broker.topics.ensure(TOPIC, QUEUES, PERM_READ | PERM_WRITE)
            assert broker.server is not None
            conn = broker.server._new_connection()
            conn.connection_made(CollectingTransport())  # type: ignore[arg-type]
            ids = UniqueIdGenerator()
            shipped = type(broker.stats)
            best = {"on": float("inf"), "off": float("inf")}
            for i in range(args.repeat):
                for mode in ("off", "on") if i % 2 == 0 else ("on", "off"):  # both orders, against drift
                    broker.stats.__class__ = _Bare if mode == "off" else shipped
                    reads = send_reads(ids, args.rounds)
                    cpu = await feed(conn, reads)
                    best[mode] = min(best[mode], cpu / (len(reads) * 64) * 1e6)
            broker.stats.__class__ = shipped
            return best
        finally:
            await broker.close()


def counter_cost(calls: int = 200_000) -> float:
    """Seconds per send that the shipped counters cost over the bare ones, timed alone."""
    costs = []
    for stats in (BrokerStats(lambda: 0), _Bare(lambda: 0)):
        t0 = time.perf_counter()
        for _ in range(calls):
            stats.record_put(1, TOPIC, 1024, "normal")
            stats.record_rpc(310, 0, 0.4)
        costs.append((time.perf_counter() - t0) / calls)
    return costs[0] - costs[1]


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="orbitmq-metrics-") as tmp:
        broker = Broker(_config(tmp))
        await broker.start()
        try:
            t0 = time.perf_counter()
            await build_state(broker, args)
            out["build_s"] = time.perf_counter() - t0
            out["scrape_ms"], out["series"], out["bytes"] = scrape_times(broker, args.scrapes)
        finally:
            await broker.close()
    if args.rounds:
        out["send_us"] = await send_cost(args)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--topics", type=int, default=1000)
    p.add_argument("--queues", type=int, default=8)
    p.add_argument("--groups", type=int, default=200)
    p.add_argument("--topics-per-group", type=int, default=5)
    p.add_argument("--per-queue", type=int, default=4, help="messages stored per queue")
    p.add_argument("--scrapes", type=int, default=10)
    p.add_argument("--rounds", type=int, default=200, help="send reads per run (64 messages each); 0 skips")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    r = run_loop(measure(args))
    times = r["scrape_ms"]
    pairs = args.groups * args.topics_per_group
    print(f"state: {args.topics} topics x {args.queues} queues, {args.groups} groups, {pairs} group-topic pairs "
          f"({pairs * args.queues} lagging queues); built in {r['build_s']:.1f} s")
    print(f"scrape: {r['series']} series, {r['bytes'] / 1024:.0f} KiB; first {times[0]:.1f} ms, "
          f"then median {statistics.median(times[1:] or times):.1f} ms, max {max(times[1:] or times):.1f} ms")
    if "send_us" in r:
        on, off = r["send_us"]["on"], r["send_us"]["off"]
        print(f"send path: {off:.2f} us CPU/msg counters off, {on:.2f} us counters on ({(on - off) / off * 100:+.1f}%)")
        print(f"counters alone: {counter_cost() * 1e6:.2f} us per send (record_put + record_rpc, shipped - bare)")


if __name__ == "__main__":
    main()
