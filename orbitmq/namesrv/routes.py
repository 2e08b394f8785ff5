"""The NameServer's route table, as pure state (RocketMQ's RouteInfoManager).

No sockets, no files, no wall clock of its own: the owner passes a clock that
returns milliseconds, and every method is a plain synchronous update. The
server's event loop is the only caller, so the tables need no lock.

Tables (keys as RocketMQ has them):

* topic -> {brokerName -> QueueData}: built from master registrations only;
* brokerName -> cluster and brokerId -> "ip:port" (answered as BrokerData);
* clusterName -> set of brokerNames;
* brokerAddr -> BrokerLiveInfo (last update, data version, HA address, connection).

Filter-server lists are accepted by `register_broker` and ignored: filter
servers were removed from RocketMQ and no 4.x client uses them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from orbitmq.common.dataversion import DataVersion
from orbitmq.common.names import PERM_READ, PERM_WRITE
from orbitmq.common.names import TOPIC_FLAG_UNIT as FLAG_UNIT
from orbitmq.common.names import TOPIC_FLAG_UNIT_SUB as FLAG_UNIT_SUB
from orbitmq.common.route import MASTER_ID, BrokerData, ClusterInfo, QueueData, TopicRouteData
from orbitmq.common.topic_config import TopicConfig

#: RocketMQ's BROKER_CHANNEL_EXPIRED_TIME: a broker heartbeats every 30 s, so
#: four missed heartbeats mean it is gone.
DEFAULT_BROKER_EXPIRY_MS = 120_000


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(slots=True)
class _Broker:
    """One broker name's cluster and addresses as the table keeps them (changed in place)."""

    cluster: str
    addrs: dict[int, str]

    def data(self, broker_name: str) -> BrokerData:
        """A frozen copy for answers; later changes to the table do not leak into it."""
        return BrokerData(self.cluster, broker_name, dict(self.addrs))


@dataclass(frozen=True, slots=True)
class BrokerLiveInfo:
    last_update_ms: int
    data_version: DataVersion
    ha_server_addr: str
    connection_id: int | None
    #: How long this broker may stay silent; None means the table's default.
    timeout_ms: int | None = None


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """One REGISTER_BROKER request, decoded.

    `topic_configs` is None when the request carried no body; RocketMQ then
    registers the broker with a zero DataVersion and no topics.
    """

    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int
    ha_server_addr: str = ""
    data_version: DataVersion = field(default_factory=DataVersion)
    topic_configs: Mapping[str, TopicConfig] | None = None
    filter_server_list: tuple[str, ...] = ()
    connection_id: int | None = None
    timeout_ms: int | None = None


@dataclass(frozen=True, slots=True)
class RegisterResult:
    """Filled for a slave whose master is registered: where to replicate from."""

    master_addr: str | None = None
    ha_server_addr: str | None = None
    #: Set when a master registration was refused as stale: the live master's
    #: address and its higher state version (epoch).
    newer_master: tuple[str, int] | None = None


@dataclass
class RouteTable:
    """The route registry. Every method runs to completion; callers own concurrency."""

    clock: Callable[[], int] = _monotonic_ms
    default_expiry_ms: int = DEFAULT_BROKER_EXPIRY_MS
    _topics: dict[str, dict[str, QueueData]] = field(default_factory=dict)
    _brokers: dict[str, _Broker] = field(default_factory=dict)
    _clusters: dict[str, set[str]] = field(default_factory=dict)
    _live: dict[str, BrokerLiveInfo] = field(default_factory=dict)

    # --- registration -------------------------------------------------------

    def register_broker(self, reg: BrokerRegistration) -> RegisterResult:
        """Record a broker's heartbeat and, for a master, its topics.

        Queue data is rewritten only on the broker's first registration or when
        its DataVersion differs from the last one seen, as RocketMQ does; slaves
        (brokerId != 0) never change topic routes. A master registration whose
        state version (epoch) is lower than the live master's at another address
        is refused and changes nothing but forgetting the stale address
        (`RegisterResult.newer_master` says why).
        """
        # An address serves one broker: if it was registered under another name
        # (a broker restarted with a new brokerName), that entry is stale.
        for name, other in list(self._brokers.items()):
            if name != reg.broker_name and reg.broker_addr in other.addrs.values():
                self._drop_addr(name, reg.broker_addr)
        self._clusters.setdefault(reg.cluster_name, set()).add(reg.broker_name)
        broker = self._brokers.get(reg.broker_name)
        if broker is None:
            broker = _Broker(reg.cluster_name, {})
            self._brokers[reg.broker_name] = broker
        # One address has one id: a slave promoted to master re-registers with
        # id 0 from the same address, and its old id must go.
        for old_id in [i for i, a in broker.addrs.items() if a == reg.broker_addr and i != reg.broker_id]:
            del broker.addrs[old_id]
        replaced = broker.addrs.get(reg.broker_id)
        newer = self._newer_master(reg, replaced)
        if newer is not None:
            # A deposed master (paused past its lease) is no broker of this
            # name now: it comes back as a slave of the newer epoch.
            self._live.pop(reg.broker_addr, None)
            return RegisterResult(newer_master=newer)
        first = replaced is None  # this id's first registration (RocketMQ's registerFirst)
        broker.addrs[reg.broker_id] = reg.broker_addr
        if replaced is not None and replaced != reg.broker_addr:
            # Another address took over this id (a master moved); the old one is no broker now.
            self._live.pop(replaced, None)

        if (
            reg.topic_configs is not None
            and reg.broker_id == MASTER_ID
            and (first or self.is_data_version_changed(reg.broker_addr, reg.data_version))
        ):
            for config in reg.topic_configs.values():
                self._put_queue_data(reg.broker_name, config)

        self._live[reg.broker_addr] = BrokerLiveInfo(
            self.clock(), reg.data_version, reg.ha_server_addr, reg.connection_id, reg.timeout_ms
        )

        if reg.broker_id != MASTER_ID:
            master_addr = broker.addrs.get(MASTER_ID)
            master = self._live.get(master_addr) if master_addr else None
            if master is not None:
                return RegisterResult(master_addr=master_addr, ha_server_addr=master.ha_server_addr)
        return RegisterResult()

    def _newer_master(self, reg: BrokerRegistration, holder: str | None) -> tuple[str, int] | None:
        """The live master at another address whose state version (epoch) beats this registration's.

        RocketMQ 5's rule in controller mode; brokers that send no state
        version (RocketMQ 4.x, OrbitMQ without a controller) all carry 0 and
        replace each other as before.
        """
        if reg.broker_id != MASTER_ID or holder is None or holder == reg.broker_addr:
            return None
        live = self._live.get(holder)
        if live is None or live.data_version.state_version <= reg.data_version.state_version:
            return None
        return holder, live.data_version.state_version

    def _put_queue_data(self, broker_name: str, config: TopicConfig) -> None:
        self._topics.setdefault(config.topic_name, {})[broker_name] = QueueData(
            broker_name,
            config.read_queue_nums,
            config.write_queue_nums,
            config.perm,
            config.topic_sys_flag,
        )

    def unregister_broker(self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int) -> None:
        """Forget one broker; when it was the name's last address, the name and its topics go too.

        The broker is found by address: RocketMQ goes by id, which removes the
        wrong broker when a confused request pairs one broker's id with
        another's address. For consistent requests both agree.
        """
        self._live.pop(broker_addr, None)
        if broker_name in self._brokers:
            self._drop_addr(broker_name, broker_addr)

    def is_data_version_changed(self, broker_addr: str, version: DataVersion) -> bool:
        live = self._live.get(broker_addr)
        return live is None or live.data_version != version

    def data_version_of(self, broker_addr: str) -> DataVersion | None:
        """The DataVersion of the broker's last registration, if it is live."""
        live = self._live.get(broker_addr)
        return live.data_version if live else None

    def touch(self, broker_addr: str) -> None:
        """Refresh a live broker's last update time (QUERY_DATA_VERSION with no change)."""
        live = self._live.get(broker_addr)
        if live is not None:
            self._live[broker_addr] = replace(live, last_update_ms=self.clock())

    def live_info(self, broker_addr: str) -> BrokerLiveInfo | None:
        return self._live.get(broker_addr)

    # --- removal of dead brokers --------------------------------------------

    def scan_not_active_brokers(self) -> list[tuple[str, int | None]]:
        """Remove brokers silent for longer than their expiry.

        Returns (brokerAddr, connection id) of each removed broker, so the owner
        can close those connections as RocketMQ does.
        """
        now = self.clock()
        expired = [
            (addr, live.connection_id)
            for addr, live in self._live.items()
            if live.last_update_ms + (live.timeout_ms or self.default_expiry_ms) < now
        ]
        for addr, _ in expired:
            self._remove_broker_addr(addr)
        return expired

    def on_connection_closed(self, connection_id: int) -> list[str]:
        """Remove every broker whose latest registration came over this connection."""
        gone = [addr for addr, live in self._live.items() if live.connection_id == connection_id]
        for addr in gone:
            self._remove_broker_addr(addr)
        return gone

    def _remove_broker_addr(self, broker_addr: str) -> None:
        self._live.pop(broker_addr, None)
        for name in list(self._brokers):
            self._drop_addr(name, broker_addr)

    def _drop_addr(self, broker_name: str, broker_addr: str) -> None:
        """Remove an address from one broker name; the name, its clusters and topics go when it was the last."""
        broker = self._brokers[broker_name]
        for i in [i for i, a in broker.addrs.items() if a == broker_addr]:
            del broker.addrs[i]
        if broker.addrs:
            return
        del self._brokers[broker_name]
        for cluster, names in list(self._clusters.items()):
            names.discard(broker_name)
            if not names:
                del self._clusters[cluster]
        self._remove_topics_of(broker_name)

    def _remove_topics_of(self, broker_name: str) -> None:
        for topic, queues in list(self._topics.items()):
            queues.pop(broker_name, None)
            if not queues:
                del self._topics[topic]

    # --- queries ------------------------------------------------------------

    def pick_route(self, topic: str) -> TopicRouteData | None:
        """The topic's route, or None unless it has both queue data and broker data.

        Broker data lists every registered id of each broker name hosting the
        topic (slaves included), copied so later changes do not leak into it.
        """
        queues = self._topics.get(topic)
        if not queues:
            return None
        brokers = tuple(b.data(name) for name in queues if (b := self._brokers.get(name)) is not None)
        if not brokers:
            return None
        return TopicRouteData(tuple(queues.values()), brokers)

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            {name: b.data(name) for name, b in self._brokers.items()},
            {cluster: tuple(sorted(names)) for cluster, names in self._clusters.items()},
        )

    def all_topics(self) -> list[str]:
        return list(self._topics)

    def topics_by_cluster(self, cluster: str) -> list[str]:
        names = self._clusters.get(cluster, set())
        return [topic for topic, queues in self._topics.items() if not names.isdisjoint(queues)]

    def system_topics(self) -> tuple[list[str], str | None]:
        """Cluster names and broker names, which brokers create as topics, plus one broker address.

        RocketMQ's admin tool sends follow-up requests to that address.
        """
        topics: list[str] = []
        for cluster, names in self._clusters.items():
            topics.append(cluster)
            topics.extend(sorted(names))
        addr = next((a for b in self._brokers.values() for a in b.addrs.values()), None)
        return topics, addr

    def unit_topics(self) -> list[str]:
        return self._topics_whose_flag(lambda f: bool(f & FLAG_UNIT))

    def has_unit_sub_topics(self) -> list[str]:
        return self._topics_whose_flag(lambda f: bool(f & FLAG_UNIT_SUB))

    def has_unit_sub_ununit_topics(self) -> list[str]:
        return self._topics_whose_flag(lambda f: not f & FLAG_UNIT and bool(f & FLAG_UNIT_SUB))

    def _topics_whose_flag(self, test: Callable[[int], bool]) -> list[str]:
        # RocketMQ looks at the first broker's flag only; unit topics are an
        # Alibaba-internal feature, so with ordinary topics these lists are empty.
        return [t for t, queues in self._topics.items() if queues and test(next(iter(queues.values())).topic_sys_flag)]

    # --- administration -----------------------------------------------------

    def wipe_write_perm(self, broker_name: str) -> int:
        """Clear the write bit of every queue of `broker_name`; returns the topic count."""
        return self._set_perm(broker_name, lambda perm: perm & ~PERM_WRITE)

    def add_write_perm(self, broker_name: str) -> int:
        """Make every queue of `broker_name` readable and writable; returns the topic count."""
        return self._set_perm(broker_name, lambda perm: PERM_READ | PERM_WRITE)

    def _set_perm(self, broker_name: str, change: Callable[[int], int]) -> int:
        count = 0
        for queues in self._topics.values():
            qd = queues.get(broker_name)
            if qd is not None:
                queues[broker_name] = replace(qd, perm=change(qd.perm))
                count += 1
        return count

    def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        """Drop a topic's route, everywhere or only on the brokers of one cluster."""
        if not cluster:
            self._topics.pop(topic, None)
            return
        queues = self._topics.get(topic)
        if queues is None:
            return
        for name in self._clusters.get(cluster, ()):
            queues.pop(name, None)
        if not queues:
            del self._topics[topic]

    def broker_addrs(self) -> Iterable[str]:
        """Addresses of every live broker."""
        return list(self._live)


__all__ = [
    "MASTER_ID",
    "BrokerData",
    "BrokerLiveInfo",
    "BrokerRegistration",
    "ClusterInfo",
    "DataVersion",
    "QueueData",
    "RegisterResult",
    "RouteTable",
    "TopicConfig",
    "TopicRouteData",
]
