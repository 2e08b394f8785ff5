"""The broker's Prometheus families, read from its state at scrape time.

Names, types, units and labels are RocketMQ 5's built-in metrics (their wire
names: unit suffix, `_total` on counters) so its dashboards and alerts carry
over; what only OrbitMQ has is named `orbitmq_*`. Every series carries
`cluster`, `node_type="broker"` and `node_id` (the broker name); store series
also `storage_type="local"` and `storage_medium="disk"`. docs/metrics.md lists
them all.

Nothing here writes to the broker; a scrape runs on the broker's event loop,
reads memory and consume queue entries, and formats nothing (family.py does).
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

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
from orbitmq.metrics.family import Family
from orbitmq.metrics.lag import LagTable
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.store.config import BrokerRole

if TYPE_CHECKING:
    from orbitmq.broker.server import Broker

COMMON_LABELS = ("cluster", "node_type", "node_id")
STORE_LABELS = ("storage_type", "storage_medium")

_code_names: dict[tuple[type, int], str] = {}


def code_name(enum: type[RequestCode | ResponseCode], code: int) -> str:
    """RocketMQ's request_code/response_code label: the constant's name lowercased, else digits."""
    key = (enum, code)
    found = _code_names.get(key)
    if found is None:
        try:
            found = enum(code).name.lower()
        except ValueError:
            found = str(code)
        _code_names[key] = found
    return found


def flag(value: bool) -> str:
    return "true" if value else "false"


class BrokerMetrics:
    """`families()` of one broker; a FamilySource."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._lag: LagTable | None = None

    def __call__(self) -> list[Family]:
        return self.families()

    def families(self) -> list[Family]:
        if self.broker.store is None:  # not started or closed: nothing to read
            return []
        config = self.broker.config
        self._common = (config.broker_cluster_name, "broker", config.broker_name)
        out: list[Family] = []
        for part in (
            self._tables, self._traffic, self._rpc, self._connections, self._storage, self._lag_families,
            self._backlogs, self._replication, self._failover,
        ):
            out.extend(part())
        return out

    def _family(self, name: str, kind: str, text: str, labels: tuple[str, ...] = (), **extra: object) -> Family:
        return Family(name, kind, text, labels, self._common, COMMON_LABELS, **extra)  # type: ignore[arg-type]

    def _single(self, name: str, text: str, value: float) -> Family:
        family = self._family(name, "gauge", text)
        family.add((), value)
        return family

    # --- broker and tables ------------------------------------------------------------

    def _tables(self) -> list[Family]:
        broker = self.broker
        return [
            self._single("rocketmq_broker_permission", "Permission bits of the broker (6 = read and write).",
                         broker.config.broker_permission),
            self._single("rocketmq_topic_number", "Topics on the broker.", len(broker.topics)),
            self._single("rocketmq_consumer_group_number", "Subscription groups on the broker.", len(broker.groups)),
        ]

    # --- counters of the request path ------------------------------------------------

    def _traffic(self) -> list[Family]:
        stats = self.broker.stats
        labels: tuple[str, ...] = ("topic", "message_type", "is_system")
        messages = self._family("rocketmq_messages_in_total", "counter", "Messages stored by sends.", labels)
        throughput = self._family("rocketmq_throughput_in_total", "counter", "Body bytes stored by sends.", labels)
        size = self._family("rocketmq_message_size", "histogram", "Body bytes per message stored.", labels,
                            bounds=MESSAGE_SIZE_BOUNDS)
        for (topic, message_type), counters in list(stats.puts.items()):
            values: tuple[str, ...] = (topic, message_type, flag(names.is_system_topic(topic)))
            messages.add(values, counters[PUT_MESSAGES])
            throughput.add(values, counters[PUT_BYTES])
            size.add_histogram(values, counters[PUT_BUCKETS:], counters[PUT_BYTES])
        labels = ("topic", "consumer_group", "is_system", "is_retry")
        out_messages = self._family("rocketmq_messages_out_total", "counter", "Messages delivered by pulls.", labels)
        out_bytes = self._family("rocketmq_throughput_out_total", "counter", "Bytes delivered by pulls.", labels)
        get_bytes = stats.get_bytes
        for (group, topic), count in list(stats.group_gets().items()):
            values = (
                topic, group, flag(names.is_system_topic(topic) or names.is_system_group(group)),
                flag(topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX)),
            )
            out_messages.add(values, count)
            out_bytes.add(values, get_bytes.get((group, topic), 0))
        dlq = self._family("rocketmq_send_to_dlq_messages_total", "counter",
                           "Messages a consumer group gave up on, sent to its dead letter topic.",
                           ("consumer_group", "topic", "is_system"))
        for (group, topic), count in list(stats.dlq_puts.items()):
            dlq.add((group, topic, flag(names.is_system_group(group))), count)
        expired = self._family("orbitmq_expired_messages_total", "counter",
                               "Messages a group's pulls skipped (or sent to its DLQ) because their TTL passed.",
                               ("consumer_group", "topic"))
        for (group, topic), count in list(stats.expired_counts().items()):
            expired.add((group, topic), count)
        return [messages, throughput, size, out_messages, out_bytes, dlq, expired]

    def _rpc(self) -> list[Family]:
        rpc = self._family("rocketmq_rpc_latency_milliseconds", "histogram",
                           "Time from a request's arrival to its response, ms.",
                           ("protocol_type", "request_code", "response_code"), bounds=RPC_LATENCY_BOUNDS_MS)
        for (request_code, response_code), counters in list(self.broker.stats.rpc.items()):
            rpc.add_histogram(
                (
                    "remoting", code_name(RequestCode, request_code),
                    "oneway" if response_code < 0 else code_name(ResponseCode, response_code),
                ),
                counters[RPC_BUCKETS:],
                counters[RPC_SUM_MS],
            )
        return [rpc]

    # --- connections --------------------------------------------------------------------

    def _connections(self) -> list[Family]:
        broker = self.broker
        producers: dict[tuple[str, str], int] = {}
        for group in broker.producers.groups():
            for channel in broker.producers.channels(group):
                key = (channel.language.lower(), str(channel.version))
                producers[key] = producers.get(key, 0) + 1
        producer = self._family("rocketmq_producer_connections", "gauge", "Producer connections.",
                                ("language", "version", "protocol_type"))
        for (language, version), count in sorted(producers.items()):
            producer.add((language, version, "remoting"), count)
        consumer = self._family(
            "rocketmq_consumer_connections", "gauge", "Consumer connections per group.",
            ("consumer_group", "language", "version", "consume_mode", "protocol_type", "is_system"),
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
                consumer.add((group, language, version, mode, "remoting", flag(names.is_system_group(group))), count)
        return [producer, consumer]

    # --- store -----------------------------------------------------------------------------

    def _storage(self) -> list[Family]:
        broker = self.broker
        store = broker.store
        assert store is not None
        info = store.runtime_info()
        max_offset = int(info.get("commitLogMaxOffset", "0"))
        min_offset = int(info.get("commitLogMinOffset", "0"))
        flushed = int(info.get("commitLogFlushedOffset", str(max_offset)))
        earliest = int(info.get("earliestMessageTimeStamp", "0") or 0)
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
            ("rocketmq_storage_message_reserve_time_milliseconds", "Age of the oldest message kept, ms.",
             max(broker.clock_ms() - earliest, 0) if earliest > 0 else 0),
            ("orbitmq_storage_total_bytes", "Size of the volume that holds the store.", total),
            ("orbitmq_storage_commitlog_bytes", "Bytes the CommitLog keeps (max - min offset).",
             max(max_offset - min_offset, 0)),
            ("orbitmq_storage_disk_ratio", "Used fraction of the store volume as the cleaner sees it (0..1).",
             float(info.get("commitLogDiskRatio", "0"))),
            ("orbitmq_storage_disk_full", "1 while the store refuses writes for lack of space.",
             1 if info.get("diskFull") == "true" else 0),
        )
        out = []
        for name, text, value in figures:
            family = self._family(name, "gauge", text, STORE_LABELS)
            family.add(("local", "disk"), value)
            out.append(family)
        return out

    # --- consumer lag ---------------------------------------------------------------------

    def _lag_families(self) -> list[Family]:
        broker = self.broker
        store = broker.store
        assert store is not None
        if self._lag is None:
            self._lag = LagTable(store.get_max_offset_in_queue, store.get_message_store_timestamp)
        queue_labels: tuple[str, ...] = ("consumer_group", "topic", "queue_id")
        q_lag = self._family("orbitmq_consumer_queue_lag_messages", "gauge",
                             "Messages behind the committed offset, per queue.", queue_labels)
        q_latency = self._family("orbitmq_consumer_queue_lag_latency_milliseconds", "gauge",
                                 "Age of the oldest message not consumed, per queue, ms.", queue_labels)
        sums: dict[tuple[str, str], list[int]] = {}
        lag_rows, latency_rows = q_lag.rows, q_latency.rows
        for row in self._lag.queues(iter(broker.offsets), broker.stats.pull_offsets, broker.clock_ms()):
            group, topic = row.group, row.topic
            values: tuple[str, ...] = (group, topic, str(row.queue_id))
            lag_rows.append((values, row.lag))
            latency_rows.append((values, row.lag_latency_ms))
            acc = sums.get((group, topic))
            if acc is None:
                sums[(group, topic)] = [row.lag, row.inflight, row.ready, row.lag_latency_ms, row.queueing_latency_ms]
            else:
                acc[0] += row.lag
                acc[1] += row.inflight
                acc[2] += row.ready
                acc[3] = max(acc[3], row.lag_latency_ms)
                acc[4] = max(acc[4], row.queueing_latency_ms)
        labels: tuple[str, ...] = ("consumer_group", "topic", "is_retry", "is_system")
        families = [
            self._family("rocketmq_consumer_lag_messages", "gauge", "Messages not yet consumed (committed).", labels),
            self._family("rocketmq_consumer_inflight_messages", "gauge", "Messages pulled but not committed.", labels),
            self._family("rocketmq_consumer_ready_messages", "gauge", "Messages not yet pulled.", labels),
            self._family("rocketmq_consumer_lag_latency_milliseconds", "gauge",
                         "Age of the oldest message not consumed, ms.", labels),
            self._family("rocketmq_consumer_queueing_latency_milliseconds", "gauge",
                         "Age of the oldest message not pulled, ms.", labels),
        ]
        for (group, topic), acc in sums.items():
            values = (group, topic, "false", flag(names.is_system_topic(topic) or names.is_system_group(group)))
            for family, value in zip(families, acc, strict=True):
                family.rows.append((values, value))
        return [*families, q_lag, q_latency]

    # --- what waits inside the broker -----------------------------------------------------

    def _backlogs(self) -> list[Family]:
        broker = self.broker
        store = broker.store
        assert store is not None
        delay = self._family("orbitmq_delay_backlog_messages", "gauge",
                             "Delay-level messages waiting for their time, per level.", ("delay_level",))
        if broker.schedule is not None:
            for level, offset in sorted(broker.schedule.offsets.items()):
                top = max(store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, level - 1), 0)
                delay.add((str(level),), max(top - offset, 0))
        timers = broker.timers
        pending = 0
        service = broker.transactions
        if service is not None:
            progress = service.progress
            top = max(store.get_max_offset_in_queue(names.TRANS_HALF_TOPIC, 0), 0)
            done = sum(1 for d in progress.done if d >= progress.half_offset)
            pending = max(top - progress.half_offset - done, 0)
        dlq = self._family("orbitmq_dlq_messages", "gauge", "Messages kept in a group's dead letter topic.",
                           ("consumer_group",))
        for topic in broker.topics.names():
            if not topic.startswith(names.DLQ_GROUP_TOPIC_PREFIX):
                continue
            config = broker.topics.get(topic)
            kept = 0
            for queue_id in range(config.write_queue_nums if config is not None else 1):
                top = max(store.get_max_offset_in_queue(topic, queue_id), 0)
                kept += max(top - max(store.get_min_offset_in_queue(topic, queue_id), 0), 0)
            dlq.add((topic[len(names.DLQ_GROUP_TOPIC_PREFIX):],), kept)
        return [
            delay,
            self._single("orbitmq_timer_backlog_messages", "Timed messages waiting for their time.",
                         len(timers.index) if timers is not None else 0),
            self._single("orbitmq_transaction_half_messages",
                         "Half (prepared) messages not yet committed or rolled back.", pending),
            dlq,
        ]

    def _failover(self) -> list[Family]:
        """Controller mode only (docs/failover.md): the epoch, the in-sync set and the events counted."""
        controller = self.broker.failover
        if controller is None:
            return []
        events = self._family("orbitmq_failover_events_total", "counter",
                              "Failover events of this replica (elected, demoted, fenced, sss_shrink, ...).", ("event",))
        for event, count in sorted(controller.events.items()):
            events.add((event,), count)
        return [
            events,
            self._single("orbitmq_failover_master_epoch", "Master epoch this replica serves or copies in.",
                         controller.epoch),
            self._single("orbitmq_failover_is_master", "1 while this replica holds the master role.",
                         1 if controller.role == "master" else 0),
            self._single("orbitmq_failover_in_sync_replicas", "Members of the group's in-sync set (etcd).",
                         len(controller.in_sync_set())),
            self._single("orbitmq_failover_may_write", "1 while the master's lease is confirmed (writes allowed).",
                         1 if controller.may_write() else 0),
        ]

    def _replication(self) -> list[Family]:
        broker = self.broker
        store = broker.store
        assert store is not None
        role = self._family("orbitmq_broker_role", "gauge", "1 for the broker's role.", ("role",))
        role.add((broker.config.store.broker_role.name,), 1)
        replication = broker.replication
        master = replication.master if replication is not None else None
        if master is None or broker.config.store.broker_role is BrokerRole.SLAVE:
            return [role]
        # Without a slave connected nobody is behind (orbitmq_ha_slave_connections tells that case).
        behind = max(store.get_max_phy_offset() - master.acks.acked, 0) if master.connections > 0 else 0
        seconds = 0.0
        if behind:
            found = store.look_message_by_offset(master.acks.acked)
            if found is not None and found.store_timestamp > 0:
                seconds = max(broker.clock_ms() - found.store_timestamp, 0) / 1000
        return [
            role,
            self._single("orbitmq_ha_slave_connections", "Slaves connected to this master's HA port.",
                         master.connections),
            self._single("orbitmq_ha_slave_behind_bytes", "CommitLog bytes the slaves have not acknowledged.", behind),
            self._single("orbitmq_ha_slave_behind_seconds",
                         "Age of the oldest message the slaves have not acknowledged, s.", seconds),
        ]
