"""Topic routes and cluster tables: what a NameServer answers (protocol reference §4.2, §4.3).

One definition for every side: the NameServer builds these from its route
table and writes them, clients, the admin tools and the Spark connector read
them. `to_json` gives the fastjson bean shape (broker ids as `int` keys, so
`orbitmq.common.jsonbody` writes them bare in the legacy form and quoted in
the standard one); `from_json` reads either form as `jsonbody.loads` returns
it. A malformed body raises `ValueError` naming what is wrong; each reader
turns it into its own error (the client's ClientError, the admin's
BrokerError, the NameServer's BodyError).

The values are frozen; their maps are private copies that nobody changes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from orbitmq.common import jsonbody
from orbitmq.common.jsonfields import JsonFieldError, get_int, get_name, get_str, json_object
from orbitmq.common.names import PERM_READ, PERM_WRITE
from orbitmq.common.queue import MessageQueue

#: The broker id of a master (MixAll.MASTER_ID).
MASTER_ID = 0


@dataclass(frozen=True, slots=True)
class QueueData:
    """One broker name's queues of a topic."""

    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> QueueData:
        obj = json_object(obj, "queueData")
        return cls(
            get_name(obj, "brokerName", "queueData"),
            get_int(obj, "readQueueNums", 0),
            get_int(obj, "writeQueueNums", 0),
            get_int(obj, "perm", 0),
            get_int(obj, "topicSysFlag", 0),
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
class BrokerData:
    """One broker name's cluster and addresses: broker id -> "ip:port", id 0 the master."""

    cluster: str
    broker_name: str
    broker_addrs: Mapping[int, str]

    @property
    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def select_addr(self) -> str | None:
        """The master, else any slave (Java's BrokerData.selectBrokerAddr picks one at random)."""
        master = self.master_addr
        if master:
            return master
        return next(iter(self.broker_addrs.values()), None)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> BrokerData:
        obj = json_object(obj, "brokerData")
        name = get_name(obj, "brokerName", "brokerData")
        raw = json_object(obj.get("brokerAddrs") or {}, "brokerAddrs")
        try:
            addrs = {int(k): str(v) for k, v in raw.items()}
        except ValueError:
            raise JsonFieldError(f"brokerAddrs of {name} has a key that is not a broker id") from None
        return cls(get_str(obj, "cluster", ""), name, dict(sorted(addrs.items())))

    def to_json(self) -> dict[str, Any]:
        return {"brokerAddrs": dict(self.broker_addrs), "brokerName": self.broker_name, "cluster": self.cluster}


@dataclass(frozen=True, slots=True)
class TopicRouteData:
    """What GET_ROUTEINFO_BY_TOPIC answers, in the order the NameServer listed it."""

    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None

    def __post_init__(self) -> None:
        # Callers may build one from lists; equality and immutability want tuples.
        if not isinstance(self.queue_datas, tuple):
            object.__setattr__(self, "queue_datas", tuple(self.queue_datas))
        if not isinstance(self.broker_datas, tuple):
            object.__setattr__(self, "broker_datas", tuple(self.broker_datas))

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> TopicRouteData:
        obj = json_object(obj, "topic route")
        queues = obj.get("queueDatas") or []
        brokers = obj.get("brokerDatas") or []
        if not isinstance(queues, list) or not isinstance(brokers, list):
            raise JsonFieldError("queueDatas and brokerDatas must be lists")
        conf = obj.get("orderTopicConf")
        return cls(
            tuple(QueueData.from_json(q) for q in queues),
            tuple(BrokerData.from_json(b) for b in brokers),
            str(conf) if conf else None,
        )

    @classmethod
    def parse(cls, body: bytes | bytearray | memoryview) -> TopicRouteData:
        """A route body in fastjson's legacy form or the standard form; ValueError if malformed."""
        return cls.from_json(json_object(jsonbody.loads(body), "topic route"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "brokerDatas": [b.to_json() for b in self.broker_datas],
            # Filter servers are gone from RocketMQ; clients expect an empty map.
            "filterServerTable": {},
            "queueDatas": [q.to_json() for q in self.queue_datas],
        }
        if self.order_topic_conf:
            out["orderTopicConf"] = self.order_topic_conf
        return out

    def encode(self, *, standard: bool) -> bytes:
        """The body a NameServer sends: fastjson's legacy form, or the standard one (4.9.4+ clients)."""
        value = self.to_json()
        return jsonbody.dumps_route_standard(value) if standard else jsonbody.dumps_legacy(value)

    def sorted(self) -> TopicRouteData:
        """The same route with queues and brokers in broker-name order (how mqadmin prints them)."""
        return TopicRouteData(
            tuple(sorted(self.queue_datas, key=lambda q: q.broker_name)),
            tuple(sorted(self.broker_datas, key=lambda b: b.broker_name)),
            self.order_topic_conf,
        )

    def broker(self, name: str) -> BrokerData | None:
        return next((b for b in self.broker_datas if b.broker_name == name), None)

    def master_addrs(self) -> dict[str, str]:
        """broker name -> master address, for every broker of the route that has a master."""
        return {b.broker_name: addr for b in self.broker_datas if (addr := b.master_addr)}

    def write_queues(self, topic: str) -> list[MessageQueue]:
        """Writable queues of brokers that have a master, by broker name (the Java client's publish order)."""
        masters = self.master_addrs()
        return [
            MessageQueue(topic, q.broker_name, i)
            for q in sorted(self.queue_datas, key=lambda q: q.broker_name)
            if q.perm & PERM_WRITE and q.broker_name in masters
            for i in range(q.write_queue_nums)
        ]

    def read_queues(self, topic: str) -> list[MessageQueue]:
        """Readable queues of every broker serving the topic, by broker name."""
        return [
            MessageQueue(topic, q.broker_name, i)
            for q in sorted(self.queue_datas, key=lambda q: q.broker_name)
            if q.perm & PERM_READ
            for i in range(q.read_queue_nums)
        ]


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    """What GET_BROKER_CLUSTER_INFO answers: brokers by name and broker names by cluster."""

    broker_addr_table: Mapping[str, BrokerData]
    cluster_addr_table: Mapping[str, Sequence[str]]

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ClusterInfo:
        obj = json_object(obj, "cluster info")
        brokers = json_object(obj.get("brokerAddrTable") or {}, "brokerAddrTable")
        clusters = json_object(obj.get("clusterAddrTable") or {}, "clusterAddrTable")
        return cls(
            {str(name): BrokerData.from_json(data) for name, data in sorted(brokers.items())},
            {str(name): tuple(sorted(str(b) for b in members)) for name, members in sorted(clusters.items())},
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerAddrTable": {name: b.to_json() for name, b in self.broker_addr_table.items()},
            "clusterAddrTable": {c: list(names) for c, names in self.cluster_addr_table.items()},
        }

    def encode(self) -> bytes:
        """Always fastjson's legacy form (bare broker ids), as RocketMQ sends it."""
        return jsonbody.dumps_legacy(self.to_json())

    def master_addrs(self, cluster: str) -> dict[str, str]:
        """broker name -> master address for the brokers of `cluster` that have a master."""
        out: dict[str, str] = {}
        for name in self.cluster_addr_table.get(cluster, ()):
            data = self.broker_addr_table.get(name)
            if data is not None and data.master_addr:
                out[name] = data.master_addr
        return out
