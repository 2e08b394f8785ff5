"""What the admin API returns: routes, cluster tables, queue statistics, configs.

Each type is built from the fastjson body RocketMQ peers send (protocol
reference §4) by one `from_json` function, so field names of the wire appear
only here. Everything is immutable and sorted the way mqadmin prints it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orbitmq.client.queue import MessageQueue
from orbitmq.common.message import MessageExt

MASTER_ID = 0

PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1


def perm_text(perm: int) -> str:
    """RocketMQ's `PermName.perm2String`: `RW-`, `R--`, `RWX` (X = inherit)."""
    return (
        ("R" if perm & PERM_READ else "-")
        + ("W" if perm & PERM_WRITE else "-")
        + ("X" if perm & PERM_INHERIT else "-")
    )


@dataclass(frozen=True, slots=True)
class BrokerData:
    cluster: str
    broker_name: str
    #: broker id -> "ip:port"; id 0 is the master.
    addrs: Mapping[int, str]

    @property
    def master_addr(self) -> str | None:
        return self.addrs.get(MASTER_ID)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> BrokerData:
        raw = obj.get("brokerAddrs") or {}
        addrs = {int(k): str(v) for k, v in raw.items()}
        return cls(str(obj.get("cluster", "")), str(obj["brokerName"]), dict(sorted(addrs.items())))

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrs": {str(k): v for k, v in self.addrs.items()},
            "brokerName": self.broker_name,
            "cluster": self.cluster,
        }


@dataclass(frozen=True, slots=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> QueueData:
        return cls(
            str(obj["brokerName"]),
            int(obj.get("readQueueNums", 0)),
            int(obj.get("writeQueueNums", 0)),
            int(obj.get("perm", 0)),
            int(obj.get("topicSysFlag", 0)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "perm": self.perm,
            "readQueueNums": self.read_queue_nums,
            "topicSysFlag": self.topic_sys_flag,
            "writeQueueNums": self.write_queue_nums,
        }


@dataclass(frozen=True, slots=True)
class TopicRoute:
    """A topic's route as a NameServer knows it (TopicRouteData, §4.2)."""

    topic: str
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None

    @classmethod
    def from_json(cls, topic: str, obj: Mapping[str, Any]) -> TopicRoute:
        queues = sorted((QueueData.from_json(q) for q in obj.get("queueDatas") or []), key=lambda q: q.broker_name)
        brokers = sorted(
            (BrokerData.from_json(b) for b in obj.get("brokerDatas") or []), key=lambda b: b.broker_name
        )
        conf = obj.get("orderTopicConf")
        return cls(topic, tuple(queues), tuple(brokers), str(conf) if conf else None)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            "filterServerTable": {},
            "queueDatas": [q.to_json() for q in self.queue_datas],
        }
        if self.order_topic_conf:
            out["orderTopicConf"] = self.order_topic_conf
        return out

    def broker(self, broker_name: str) -> BrokerData | None:
        return next((b for b in self.broker_datas if b.broker_name == broker_name), None)

    def master_addrs(self) -> dict[str, str]:
        """broker name -> master address, for every broker of the route that has a master."""
        return {b.broker_name: b.master_addr for b in self.broker_datas if b.master_addr}

    def write_queues(self) -> list[MessageQueue]:
        """Queues a producer may send to (writable, broker has a master), in the Java client's order."""
        masters = self.master_addrs()
        return [
            MessageQueue(self.topic, q.broker_name, i)
            for q in self.queue_datas
            if q.perm & PERM_WRITE and q.broker_name in masters
            for i in range(q.write_queue_nums)
        ]

    def read_queues(self) -> list[MessageQueue]:
        return [
            MessageQueue(self.topic, q.broker_name, i)
            for q in self.queue_datas
            if q.perm & PERM_READ
            for i in range(q.read_queue_nums)
        ]


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """GET_BROKER_CLUSTER_INFO (§4.3): brokers by name and broker names by cluster."""

    brokers: Mapping[str, BrokerData]
    clusters: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ClusterInfo:
        brokers = {
            str(name): BrokerData.from_json(data) for name, data in (obj.get("brokerAddrTable") or {}).items()
        }
        clusters = {
            str(name): tuple(sorted(str(b) for b in members))
            for name, members in (obj.get("clusterAddrTable") or {}).items()
        }
        return cls(dict(sorted(brokers.items())), dict(sorted(clusters.items())))

    def master_addrs(self, cluster: str) -> dict[str, str]:
        """broker name -> master address for the brokers of `cluster` that have a master."""
        out: dict[str, str] = {}
        for name in self.clusters.get(cluster, ()):
            data = self.brokers.get(name)
            if data is not None and data.master_addr:
                out[name] = data.master_addr
        return out


@dataclass(frozen=True, slots=True)
class QueueStat:
    """One queue of TopicStatsTable (§4.11)."""

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_timestamp: int


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """One queue of ConsumeStats (§4.11): the broker's end against the group's committed offset."""

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp: int

    @property
    def diff(self) -> int:
        return max(0, self.broker_offset - self.consumer_offset)


@dataclass(frozen=True, slots=True)
class ConsumeStats:
    queues: tuple[QueueProgress, ...]
    consume_tps: float = 0.0

    @property
    def diff_total(self) -> int:
        return sum(q.diff for q in self.queues)


@dataclass(frozen=True, slots=True)
class TopicConfig:
    """What `updateTopic` sends (CreateTopicRequestHeader, §3.9)."""

    topic: str
    read_queue_nums: int = 8
    write_queue_nums: int = 8
    perm: int = PERM_READ | PERM_WRITE
    order: bool = False
    topic_sys_flag: int = 0
    topic_filter_type: str = "SINGLE_TAG"

    def to_ext_fields(self, default_topic: str = "TBW102") -> dict[str, str]:
        return {
            "topic": self.topic,
            "defaultTopic": default_topic,
            "readQueueNums": str(self.read_queue_nums),
            "writeQueueNums": str(self.write_queue_nums),
            "perm": str(self.perm),
            "topicFilterType": self.topic_filter_type,
            "topicSysFlag": str(self.topic_sys_flag),
            "order": "true" if self.order else "false",
        }


@dataclass(frozen=True, slots=True)
class SubscriptionGroupConfig:
    """SubscriptionGroupConfig (§4.13) with RocketMQ's defaults."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> SubscriptionGroupConfig:
        defaults = cls(str(obj["groupName"]))
        return cls(
            defaults.group_name,
            bool(obj.get("consumeEnable", defaults.consume_enable)),
            bool(obj.get("consumeFromMinEnable", defaults.consume_from_min_enable)),
            bool(obj.get("consumeBroadcastEnable", defaults.consume_broadcast_enable)),
            int(obj.get("retryQueueNums", defaults.retry_queue_nums)),
            int(obj.get("retryMaxTimes", defaults.retry_max_times)),
            int(obj.get("brokerId", defaults.broker_id)),
            int(obj.get("whichBrokerWhenConsumeSlowly", defaults.which_broker_when_consume_slowly)),
            bool(obj.get("notifyConsumerIdsChangedEnable", defaults.notify_consumer_ids_changed_enable)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerId": self.broker_id,
            "consumeBroadcastEnable": self.consume_broadcast_enable,
            "consumeEnable": self.consume_enable,
            "consumeFromMinEnable": self.consume_from_min_enable,
            "groupName": self.group_name,
            "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            "retryMaxTimes": self.retry_max_times,
            "retryQueueNums": self.retry_queue_nums,
            "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
        }


@dataclass(frozen=True, slots=True)
class Connection:
    """One client connection of a consumer group (ConsumerConnection.connectionSet, §4.10)."""

    client_id: str
    client_addr: str
    language: str
    version: int


@dataclass(frozen=True, slots=True)
class ConsumerConnection:
    """GET_CONSUMER_CONNECTION_LIST: who is online in a group and what it subscribes to."""

    connections: tuple[Connection, ...]
    #: topic -> subscription expression
    subscriptions: Mapping[str, str]
    consume_type: str = ""
    message_model: str = ""
    consume_from_where: str = ""

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ConsumerConnection:
        conns = sorted(
            (
                Connection(str(c.get("clientId", "")), str(c.get("clientAddr", "")), str(c.get("language", "")),
                           int(c.get("version", 0)))
                for c in obj.get("connectionSet") or []
            ),
            key=lambda c: c.client_id,
        )
        subs = {str(t): str((d or {}).get("subString", "")) for t, d in (obj.get("subscriptionTable") or {}).items()}
        return cls(
            tuple(conns), dict(sorted(subs.items())), str(obj.get("consumeType") or ""),
            str(obj.get("messageModel") or ""), str(obj.get("consumeFromWhere") or ""),
        )


@dataclass(frozen=True, slots=True)
class SendResult:
    """What one `sendMessage` produced."""

    queue: MessageQueue
    msg_id: str
    offset_msg_id: str
    queue_offset: int
    status: str = "SEND_OK"


@dataclass(frozen=True, slots=True)
class PullResult:
    """One PULL_MESSAGE answer, with messages decoded (status named as the Java client does)."""

    status: str
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: tuple[MessageExt, ...] = field(default_factory=tuple)
