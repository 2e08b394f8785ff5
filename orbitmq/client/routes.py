"""Topic routes from the NameServer and the queue lists derived from them (§4.2, §6.3).

Pure data and functions: the client instance fetches `TopicRouteData`
(`orbitmq.common.route`, re-exported here) and asks here which queues a
producer may write and a consumer may read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.client.fault import QueueRoundRobin
from orbitmq.client.queue import MessageQueue
from orbitmq.common.route import MASTER_ID, BrokerData, QueueData, TopicRouteData
from orbitmq.errors import ClientError


def parse_route(body: bytes | bytearray | memoryview) -> TopicRouteData:
    """A route body in either JSON form; ClientError when it is malformed."""
    try:
        return TopicRouteData.parse(body)
    except ValueError as exc:
        raise ClientError(f"malformed topic route body: {exc}") from exc


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
    return TopicPublishInfo(route.write_queues(topic))


def subscribe_queues(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """Readable queues of every broker serving the topic."""
    return set(route.read_queues(topic))


def default_topic_route_for(route: TopicRouteData, queue_nums: int) -> TopicRouteData:
    """The template topic's route cut to `queue_nums` queues per broker (auto-create on first send)."""
    queues = tuple(
        QueueData(q.broker_name, min(queue_nums, q.read_queue_nums), min(queue_nums, q.read_queue_nums),
                  q.perm, q.topic_sys_flag)
        for q in route.queue_datas
    )
    return TopicRouteData(queues, route.broker_datas, route.order_topic_conf)


__all__ = [
    "MASTER_ID",
    "BrokerData",
    "QueueData",
    "TopicPublishInfo",
    "TopicRouteData",
    "default_topic_route_for",
    "parse_route",
    "publish_queues",
    "subscribe_queues",
]
