"""Topic routes from the NameServer and the queue lists derived from them (§4.2, §6.3).

Pure data and functions: the client instance fetches `TopicRouteData` and
asks here which queues a producer may write and a consumer may read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.client.fault import QueueRoundRobin
from orbitmq.client.queue import MessageQueue
from orbitmq.common.jsonbody import int_keys, loads
from orbitmq.errors import ClientError

PERM_READ = 4
PERM_WRITE = 2
PERM_INHERIT = 1
MASTER_ID = 0


@dataclass(frozen=True)
class QueueData:
    broker_name: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_sys_flag: int = 0


@dataclass(frozen=True)
class BrokerData:
    cluster: str
    broker_name: str
    broker_addrs: dict[int, str]

    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def select_addr(self) -> str | None:
        """The master, else any slave (Java's BrokerData.selectBrokerAddr picks randomly)."""
        master = self.master_addr()
        if master:
            return master
        return next(iter(self.broker_addrs.values()), None)


@dataclass(frozen=True)
class TopicRouteData:
    queue_datas: tuple[QueueData, ...]
    broker_datas: tuple[BrokerData, ...]
    order_topic_conf: str | None = None

    @classmethod
    def parse(cls, body: bytes) -> TopicRouteData:
        try:
            # Standard JSON or fastjson's legacy form ({0:"addr"} with bare numeric keys).
            obj = loads(body)
            queues = tuple(
                QueueData(
                    str(q["brokerName"]),
                    int(q.get("readQueueNums", 0)),
                    int(q.get("writeQueueNums", 0)),
                    int(q.get("perm", 0)),
                    int(q.get("topicSysFlag", 0)),
                )
                for q in obj.get("queueDatas") or []
            )
            brokers = tuple(
                BrokerData(
                    str(b.get("cluster", "")),
                    str(b["brokerName"]),
                    {k: str(v) for k, v in int_keys(b.get("brokerAddrs") or {}).items()},
                )
                for b in obj.get("brokerDatas") or []
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ClientError(f"malformed topic route body: {exc}") from exc
        return cls(queues, brokers, obj.get("orderTopicConf"))

    def broker(self, name: str) -> BrokerData | None:
        for b in self.broker_datas:
            if b.broker_name == name:
                return b
        return None


@dataclass
class TopicPublishInfo:
    """The queues a producer writes to, with the round-robin counter for them."""

    queues: list[MessageQueue]
    order_topic: bool = False
    counter: QueueRoundRobin = field(default_factory=QueueRoundRobin)

    @property
    def ok(self) -> bool:
        return bool(self.queues)


def publish_queues(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    """Writable queues of brokers that have a master, by broker name (or as `orderTopicConf` says)."""
    if route.order_topic_conf:
        queues: list[MessageQueue] = []
        for item in route.order_topic_conf.split(";"):
            name, _, nums = item.partition(":")
            if name and nums.isdigit():
                queues.extend(MessageQueue(topic, name, i) for i in range(int(nums)))
        return TopicPublishInfo(queues, order_topic=True)
    queues = []
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not qd.perm & PERM_WRITE:
            continue
        broker = route.broker(qd.broker_name)
        if broker is None or broker.master_addr() is None:
            continue
        queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
    return TopicPublishInfo(queues)


def subscribe_queues(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """Readable queues of every broker serving the topic."""
    return {
        MessageQueue(topic, qd.broker_name, i)
        for qd in route.queue_datas
        if qd.perm & PERM_READ
        for i in range(qd.read_queue_nums)
    }


def default_topic_route_for(route: TopicRouteData, queue_nums: int) -> TopicRouteData:
    """The template topic's route cut to `queue_nums` queues per broker (auto-create on first send)."""
    queues = tuple(
        QueueData(q.broker_name, min(queue_nums, q.read_queue_nums), min(queue_nums, q.read_queue_nums),
                  q.perm, q.topic_sys_flag)
        for q in route.queue_datas
    )
    return TopicRouteData(queues, route.broker_datas, route.order_topic_conf)
