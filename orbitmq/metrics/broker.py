"""The broker's Prometheus families, read from its state at scrape time.

Names, types, units and labels are RocketMQ 5's built-in metrics (their wire
names: unit suffix, `_total` on counters) so its dashboards and alerts carry
over; what only OrbitMQ has is named `orbitmq_*`. Every series carries
`cluster`, `node_type="broker"` and `node_id` (the broker name). See
docs/metrics.md for the list.

Nothing here writes to the broker; a scrape runs on the broker's event loop
and touches no file but the store's mapped consume queues.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from orbitmq.broker.stats import (
    MESSAGE_SIZE_BOUNDS,
    PUT_BUCKETS,
    PUT_BYTES,
    PUT_MESSAGES,
    RPC_BUCKETS,
    RPC_LATENCY_BOUNDS_MS,
    RPC_SUM_MS,
)
from orbitmq.common import names
from orbitmq.metrics.lag import LagTable, QueueLag
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.store.config import BrokerRole

if TYPE_CHECKING:
    from orbitmq.broker.server import Broker

COMMON_LABELS = ("cluster", "node_type", "node_id")
STORE_LABELS = ("storage_type", "storage_medium")


def code_name(enum: type[RequestCode | ResponseCode], code: int) -> str:
    """RocketMQ's request_code/response_code label: the constant's name lowercased, else digits."""
    try:
        return enum(code).name.lower()
    except ValueError:
        return str(code)


def flag(value: bool) -> str:
    return "true" if value else "false"


def buckets(bounds: Iterable[float], counts: Iterable[float]) -> list[tuple[str, float]]:
    """Cumulative (le, count) pairs from per-bucket counts (the last one is +Inf)."""
    out: list[tuple[str, float]] = []
    total = 0.0
    les = [f"{float(b)}" for b in bounds] + ["+Inf"]
    for le, count in zip(les, counts, strict=True):
        total += count
        out.append((le, total))
    return out


class BrokerCollector(Collector):
    """Collects one broker's families; register it on a CollectorRegistry."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._lag: LagTable | None = None

    def _common(self) -> list[str]:
        config = self.broker.config
        return [config.broker_cluster_name, "broker", config.broker_name]

    def collect(self) -> Iterator[Metric]:
        store = self.broker.store
        if store is None:  # not started or closed: nothing to read
            return
        common = self._common()
        yield from self._tables(common)
        yield from self._traffic(common)
        yield from self._rpc(common)
        yield from self._connections(common)
        yield from self._storage(common)
        yield from self._lag_families(common)
        yield from self._backlogs(common)
        yield from self._replication(common)

    # --- broker and tables ------------------------------------------------------------

    def _tables(self, common: list[str]) -> Iterator[Metric]:
        broker = self.broker
        gauge = GaugeMetricFamily("rocketmq_broker_permission", "Permission bits of the broker (6 = RW).",
                                  labels=COMMON_LABELS)
        gauge.add_metric(common, broker.config.broker_permission)
        yield gauge
        gauge = GaugeMetricFamily("rocketmq_topic_number", "Topics on the broker.", labels=COMMON_LABELS)
        gauge.add_metric(common, len(broker.topics))
        yield gauge
        gauge = GaugeMetricFamily("rocketmq_consumer_group_number", "Subscription groups on the broker.",
                                  labels=COMMON_LABELS)
        gauge.add_metric(common, len(broker.groups))
        yield gauge

    # --- counters of the request path ------------------------------------------------

    def _traffic(self, common: list[str]) -> Iterator[Metric]:
        stats = self.broker.stats
        labels: tuple[str, ...] = (*COMMON_LABELS, "topic", "message_type", "is_system")
        messages = CounterMetricFamily("rocketmq_messages_in", "Messages stored by sends.", labels=labels)
        throughput = CounterMetricFamily("rocketmq_throughput_in", "Bytes of message bodies stored by sends.",
                                         labels=labels)
        size = HistogramMetricFamily("rocketmq_message_size", "Body bytes per message stored.", labels=labels)
        for (topic, message_type), counters in list(stats.puts.items()):
            values = [*common, topic, message_type, flag(names.is_system_topic(topic))]
            messages.add_metric(values, counters[PUT_MESSAGES])
            throughput.add_metric(values, counters[PUT_BYTES])
            size.add_metric(values, buckets(MESSAGE_SIZE_BOUNDS, counters[PUT_BUCKETS:]), counters[PUT_BYTES])
        yield messages
        yield throughput
        yield size
        labels = (*COMMON_LABELS, "topic", "consumer_group", "is_system", "is_retry")
        messages = CounterMetricFamily("rocketmq_messages_out", "Messages delivered by pulls.", labels=labels)
        throughput = CounterMetricFamily("rocketmq_throughput_out", "Bytes delivered by pulls.", labels=labels)
        for (group, topic), count in list(stats.group_gets().items()):
            values = [
                *common, topic, group, flag(names.is_system_topic(topic) or names.is_system_group(group)),
                flag(topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX)),
            ]
            messages.add_metric(values, count)
            throughput.add_metric(values, stats.get_bytes.get((group, topic), 0))
        yield messages
        yield throughput
        dlq = CounterMetricFamily(
            "rocketmq_send_to_dlq_messages", "Messages a consumer group gave up on, sent to its DLQ.",
            labels=(*COMMON_LABELS, "consumer_group", "topic", "is_system"),
        )
        for (group, topic), count in list(stats.dlq_puts.items()):
            dlq.add_metric([*common, group, topic, flag(names.is_system_group(group))], count)
        yield dlq

    def _rpc(self, common: list[str]) -> Iterator[Metric]:
        rpc = HistogramMetricFamily(
            "rocketmq_rpc_latency_milliseconds", "Time from a request's arrival to its response, ms.",
            labels=(*COMMON_LABELS, "protocol_type", "request_code", "response_code"),
        )
        for (request_code, response_code), counters in list(self.broker.stats.rpc.items()):
            rpc.add_metric(
                [
                    *common, "remoting", code_name(RequestCode, request_code),
                    "oneway" if response_code < 0 else code_name(ResponseCode, response_code),
                ],
                buckets(RPC_LATENCY_BOUNDS_MS, counters[RPC_BUCKETS:]),
                counters[RPC_SUM_MS],
            )
        yield rpc

    # --- connections --------------------------------------------------------------------

    def _connections(self, common: list[str]) -> Iterator[Metric]:
        broker = self.broker
        producers: dict[tuple[str, str], int] = {}
        for group in broker.producers.groups():
            for channel in broker.producers.channels(group):
                key = (channel.language.lower(), str(channel.version))
                producers[key] = producers.get(key, 0) + 1
        gauge = GaugeMetricFamily(
            "rocketmq_producer_connections", "Producer connections.",
            labels=(*COMMON_LABELS, "language", "version", "protocol_type"),
        )
        for (language, version), count in sorted(producers.items()):
            gauge.add_metric([*common, language, version, "remoting"], count)
        yield gauge
        gauge = GaugeMetricFamily(
            "rocketmq_consumer_connections", "Consumer connections per group.",
            labels=(*COMMON_LABELS, "consumer_group", "language", "version", "consume_mode", "protocol_type",
                    "is_system"),
        )
        for group in broker.consumers.groups():
            info = broker.consumers.get(group)
            if info is None:
                continue
            mode = "push" if info.consume_type.upper() == "CONSUME_PASSIVELY" else "pull"
            consumers: dict[tuple[str, str], int] = {}
            for channel in info.channels.values():
                key = (channel.language.lower(), str(channel.version))
                consumers[key] = consumers.get(key, 0) + 1
            for (language, version), count in sorted(consumers.items()):
                gauge.add_metric(
                    [*common, group, language, version, mode, "remoting", flag(names.is_system_group(group))], count
                )
        yield gauge

    # --- store -----------------------------------------------------------------------------

    def _storage(self, common: list[str]) -> Iterator[Metric]:
        broker = self.broker
        store = broker.store
        assert store is not None
        info = store.runtime_info()
        labels = (*COMMON_LABELS, *STORE_LABELS)
        values = [*common, "local", "disk"]
        max_offset = int(info.get("commitLogMaxOffset", "0"))
        min_offset = int(info.get("commitLogMinOffset", "0"))
        flushed = int(info.get("commitLogFlushedOffset", str(max_offset)))
        try:
            usage = shutil.disk_usage(broker.config.store.root_dir)
            used, total = usage.used, usage.total
        except OSError:
            used = total = 0
        figures = (
            ("rocketmq_storage_size_bytes", "Used bytes of the volume that holds the store.", used),
            ("rocketmq_storage_flush_behind_bytes", "CommitLog bytes written but not flushed.",
             max(max_offset - flushed, 0)),
            ("rocketmq_storage_dispatch_behind_bytes", "CommitLog bytes not yet dispatched to consume queues.",
             int(info.get("dispatchBehindBytes", "0"))),
            ("orbitmq_storage_total_bytes", "Size of the volume that holds the store.", total),
            ("orbitmq_storage_commitlog_bytes", "Bytes the CommitLog keeps (max - min offset).",
             max(max_offset - min_offset, 0)),
            ("orbitmq_storage_disk_ratio", "Used fraction of the store volume, as the cleaner sees it (0..1).",
             float(info.get("commitLogDiskRatio", "0"))),
            ("orbitmq_storage_disk_full", "1 while the store refuses writes for lack of space.",
             1 if info.get("diskFull") == "true" else 0),
        )
        for name, text, value in figures:
            gauge = GaugeMetricFamily(name, text, labels=labels)
            gauge.add_metric(values, value)
            yield gauge
        earliest = int(info.get("earliestMessageTimeStamp", "0") or 0)
        gauge = GaugeMetricFamily(
            "rocketmq_storage_message_reserve_time_milliseconds", "Age of the oldest message kept, ms.",
            labels=labels,
        )
        gauge.add_metric(values, max(broker.clock_ms() - earliest, 0) if earliest > 0 else 0)
        yield gauge

    # --- consumer lag ---------------------------------------------------------------------

    def _lag_table(self) -> LagTable:
        if self._lag is None:
            store = self.broker.store
            assert store is not None
            self._lag = LagTable(store.get_max_offset_in_queue, store.get_message_store_timestamp)
        return self._lag

    def _lag_families(self, common: list[str]) -> Iterator[Metric]:
        broker = self.broker
        rows: list[QueueLag] = list(
            self._lag_table().queues(iter(broker.offsets), broker.stats.pull_offsets, broker.clock_ms())
        )
        group_labels = (*COMMON_LABELS, "consumer_group", "topic", "is_retry", "is_system")
        queue_labels = (*COMMON_LABELS, "consumer_group", "topic", "queue_id")
        sums: dict[tuple[str, str], list[int]] = {}
        q_lag = GaugeMetricFamily("orbitmq_consumer_queue_lag_messages",
                                  "Messages behind the committed offset, per queue.", labels=queue_labels)
        q_latency = GaugeMetricFamily("orbitmq_consumer_queue_lag_latency_milliseconds",
                                      "Age of the oldest unconsumed message, per queue, ms.", labels=queue_labels)
        for row in rows:
            values = [*common, row.group, row.topic, str(row.queue_id)]
            q_lag.add_metric(values, row.lag)
            q_latency.add_metric(values, row.lag_latency_ms)
            acc = sums.get((row.group, row.topic))
            if acc is None:
                sums[(row.group, row.topic)] = [row.lag, row.inflight, row.ready, row.lag_latency_ms,
                                                row.queueing_latency_ms]
            else:
                acc[0] += row.lag
                acc[1] += row.inflight
                acc[2] += row.ready
                acc[3] = max(acc[3], row.lag_latency_ms)
                acc[4] = max(acc[4], row.queueing_latency_ms)
        families = [
            GaugeMetricFamily("rocketmq_consumer_lag_messages", "Messages not yet consumed (committed).",
                              labels=group_labels),
            GaugeMetricFamily("rocketmq_consumer_inflight_messages", "Messages pulled but not committed.",
                              labels=group_labels),
            GaugeMetricFamily("rocketmq_consumer_ready_messages", "Messages not yet pulled.", labels=group_labels),
            GaugeMetricFamily("rocketmq_consumer_lag_latency_milliseconds",
                              "Age of the oldest message not consumed, ms.", labels=group_labels),
            GaugeMetricFamily("rocketmq_consumer_queueing_latency_milliseconds",
                              "Age of the oldest message not pulled, ms.", labels=group_labels),
        ]
        for (group, topic), acc in sums.items():
            values = [*common, group, topic, "false", flag(names.is_system_topic(topic) or names.is_system_group(group))]
            for family, value in zip(families, acc, strict=True):
                family.add_metric(values, value)
        yield from families
        yield q_lag
        yield q_latency

    # --- what waits inside the broker -----------------------------------------------------

    def _backlogs(self, common: list[str]) -> Iterator[Metric]:
        broker = self.broker
        store = broker.store
        assert store is not None
        delay = GaugeMetricFamily("orbitmq_delay_backlog_messages",
                                  "Delay-level messages waiting for their time, per level.",
                                  labels=(*COMMON_LABELS, "delay_level"))
        if broker.schedule is not None:
            for level, offset in sorted(broker.schedule.offsets.items()):
                top = max(store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, level - 1), 0)
                delay.add_metric([*common, str(level)], max(top - offset, 0))
        yield delay
        timer = GaugeMetricFamily("orbitmq_timer_backlog_messages", "Timed messages waiting for their time.",
                                  labels=COMMON_LABELS)
        timer.add_metric(common, len(broker.timers.index) if broker.timers is not None else 0)
        yield timer
        half = GaugeMetricFamily("orbitmq_transaction_half_messages",
                                 "Half (prepared) messages not yet committed or rolled back.", labels=COMMON_LABELS)
        service = broker.transactions
        pending = 0
        if service is not None:
            progress = service.progress
            top = max(store.get_max_offset_in_queue(names.TRANS_HALF_TOPIC, 0), 0)
            done = sum(1 for d in progress.done if d >= progress.half_offset)
            pending = max(top - progress.half_offset - done, 0)
        half.add_metric(common, pending)
        yield half
        dlq = GaugeMetricFamily("orbitmq_dlq_messages", "Messages kept in a group's dead letter topic.",
                                labels=(*COMMON_LABELS, "consumer_group"))
        for topic in broker.topics.names():
            if not topic.startswith(names.DLQ_GROUP_TOPIC_PREFIX):
                continue
            config = broker.topics.get(topic)
            queues = config.write_queue_nums if config is not None else 1
            kept = 0
            for queue_id in range(queues):
                top = max(store.get_max_offset_in_queue(topic, queue_id), 0)
                kept += max(top - max(store.get_min_offset_in_queue(topic, queue_id), 0), 0)
            dlq.add_metric([*common, topic[len(names.DLQ_GROUP_TOPIC_PREFIX):]], kept)
        yield dlq

    def _replication(self, common: list[str]) -> Iterator[Metric]:
        broker = self.broker
        store = broker.store
        assert store is not None
        role = GaugeMetricFamily("orbitmq_broker_role", "1 for the broker's role (ASYNC_MASTER, SYNC_MASTER, SLAVE).",
                                 labels=(*COMMON_LABELS, "role"))
        role.add_metric([*common, broker.config.store.broker_role.name], 1)
        yield role
        replication = broker.replication
        master = replication.master if replication is not None else None
        if master is None or broker.config.store.broker_role is BrokerRole.SLAVE:
            return
        # Without a slave connected there is nobody to be behind (orbitmq_ha_slave_connections says so).
        behind = max(store.get_max_phy_offset() - master.acks.acked, 0) if master.connections > 0 else 0
        seconds = 0.0
        if behind:
            found = store.look_message_by_offset(master.acks.acked)
            if found is not None and found.store_timestamp > 0:
                seconds = max(broker.clock_ms() - found.store_timestamp, 0) / 1000
        for name, text, value in (
            ("orbitmq_ha_slave_connections", "Slaves connected to this master's HA port.", master.connections),
            ("orbitmq_ha_slave_behind_bytes", "CommitLog bytes the slaves have not acknowledged.", behind),
            ("orbitmq_ha_slave_behind_seconds", "Age of the oldest message the slaves have not acknowledged.",
             seconds),
        ):
            gauge = GaugeMetricFamily(name, text, labels=COMMON_LABELS)
            gauge.add_metric(common, value)
            yield gauge
