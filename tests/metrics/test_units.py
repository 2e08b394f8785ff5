"""The text renderer against prometheus_client's reading of it, and the lag table's arithmetic
and store-time cache."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from orbitmq.broker.stats import BrokerStats
from orbitmq.metrics.family import Family, FamilyCollector, render_text
from orbitmq.metrics.lag import LagTable


def _families() -> list[Family]:
    common = ("c1", "broker", "b-1")
    labels = ("cluster", "node_type", "node_id")
    counter = Family("x_messages_total", "counter", "Messages.", ("topic",), common, labels)
    counter.add(("plain",), 3)
    counter.add(('we"ird\\na\nme',), 2.5)
    gauge = Family("x_lag", "gauge", "Lag.", (), common, labels)
    gauge.add((), 7)
    histogram = Family("x_size", "histogram", "Sizes.", ("topic",), common, labels, bounds=(10, 100))
    histogram.add_histogram(("t",), [1, 2, 3], 321.0)
    bare = Family("x_up", "gauge", "Up.", ())
    bare.add((), 1)
    return [counter, gauge, histogram, bare]


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if not s.name.endswith("_created")
    }


def test_render_text_reads_back_as_prometheus_client_renders_the_same_families() -> None:
    ours = _samples(render_text(_families()).decode())
    registry = CollectorRegistry(auto_describe=False)
    registry.register(FamilyCollector(_families))
    theirs = _samples(generate_latest(registry).decode())
    assert ours == theirs
    common = {("cluster", "c1"), ("node_type", "broker"), ("node_id", "b-1")}
    assert ours[("x_messages_total", frozenset({*common, ("topic", 'we"ird\\na\nme')}))] == 2.5
    assert ours[("x_size_bucket", frozenset({*common, ("topic", "t"), ("le", "100.0")}))] == 3
    assert ours[("x_size_bucket", frozenset({*common, ("topic", "t"), ("le", "+Inf")}))] == 6
    assert ours[("x_size_count", frozenset({*common, ("topic", "t")}))] == 6
    assert ours[("x_up", frozenset())] == 1


def test_put_counters_fill_the_size_buckets() -> None:
    stats = BrokerStats(lambda: 0)
    stats.record_put(1, "T", 1024)
    stats.record_put(1, "T", 1025)
    stats.record_put(4, "T", 4 * 5000)  # a batch: its average size picks the bucket
    counters = stats.puts[("T", "normal")]
    assert counters[:2] == [6, 1024 + 1025 + 20000]
    assert counters[2:] == [1, 1, 4, 0, 0, 0, 0]


class _Store:
    def __init__(self) -> None:
        self.top = {("T", 0): 10, ("T", 1): 4}
        self.reads: list[tuple[str, int, int]] = []

    def max_offset(self, topic: str, queue_id: int) -> int:
        return self.top.get((topic, queue_id), 0)

    def store_time(self, topic: str, queue_id: int, offset: int) -> int:
        self.reads.append((topic, queue_id, offset))
        return 1_000 + offset


def test_lag_per_queue_and_the_store_time_cache() -> None:
    store = _Store()
    table = LagTable(store.max_offset, store.store_time)
    committed = [("T", "G", {0: 3, 1: 4}), ("%RETRY%G", "G", {0: 0})]
    pulled = {("G", "T"): {0: 6}}
    rows = list(table.queues(iter(committed), pulled, 5_000))
    assert [(r.queue_id, r.lag, r.inflight, r.ready, r.lag_latency_ms, r.queueing_latency_ms) for r in rows] == [
        (0, 7, 3, 4, 5_000 - 1_003, 5_000 - 1_006),
        (1, 0, 0, 0, 0, 0),
    ]
    assert sorted(store.reads) == [("T", 0, 3), ("T", 0, 6)]
    # Nothing moved: the next scrape reads no store time.
    store.reads.clear()
    list(table.queues(iter(committed), pulled, 6_000))
    assert store.reads == []
    # The committed offset moved: only its time is read.
    committed[0] = ("T", "G", {0: 5, 1: 4})
    rows = list(table.queues(iter(committed), pulled, 6_000))
    assert store.reads == [("T", 0, 5)] and rows[0].lag == 5
