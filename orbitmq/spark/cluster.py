"""Blocking access to an OrbitMQ (or RocketMQ 4.x) cluster for Spark's Python processes.

Spark calls the data source from short-lived planner processes, one
long-lived stream-reader process and many task processes; none of them runs
an event loop. `Cluster` owns a private event loop and drives the client's
`MQClientAPI` on it, exposing the handful of requests the connector needs as
plain blocking calls: routes, queue offset bounds, search by time, pull at an
offset, batch send and offset reports. Pulls come back as the client's
`PullResult` with the records undecoded (`message_binary`), which
`records.py` decodes column-wise. One `Cluster` serves one process (or one
task) and is closed by its owner; asyncio objects never cross a process
boundary.

When credentials are configured every request is signed (plain ACL, by
the client's `acl.SigningRemotingClient`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self, TypeVar

from orbitmq.client.acl import AclCredentials, make_remoting_client
from orbitmq.client.api import MQClientAPI
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.pull import PullResult
from orbitmq.common.queue import MessageQueue
from orbitmq.common.route import TopicRouteData
from orbitmq.errors import BrokerError, ClientError, ConnectError, NoRouteError, RemotingError, TopicNotExist
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.headers import SendMessageRequestHeader
from orbitmq.remoting.loop import loop_factory
from orbitmq.remoting.sysflag import PullSysFlag
from orbitmq.spark.offsets import QueueRef
from orbitmq.spark.options import ConnectionOptions

T = TypeVar("T")

__all__ = ["Cluster", "TopicRoute", "spark_route"]


@dataclass(frozen=True)
class TopicRoute:
    """Where a topic lives: master address per broker and its readable and writable queues."""

    topic: str
    masters: dict[str, str]
    read_queues: tuple[QueueRef, ...]
    write_queues: tuple[QueueRef, ...]


def _ref(mq: MessageQueue) -> QueueRef:
    return QueueRef(mq.topic, mq.broker_name, mq.queue_id)


def _mq(q: QueueRef) -> MessageQueue:
    return MessageQueue(q.topic, q.broker_name, q.queue_id)


def spark_route(topic: str, route: TopicRouteData) -> TopicRoute:
    """The connector's view of a route: only brokers with a registered master count.

    The connector reads and writes masters alone, so a broker without one is
    neither readable nor writable here.
    """
    masters = route.master_addrs()
    reads = [_ref(mq) for mq in route.read_queues(topic) if mq.broker_name in masters]
    writes = [_ref(mq) for mq in route.write_queues(topic)]
    return TopicRoute(topic, masters, tuple(sorted(reads)), tuple(sorted(writes)))


class Cluster:
    """Blocking requests to the name servers and brokers of one cluster. Not thread-safe."""

    def __init__(self, options: ConnectionOptions) -> None:
        self._options = options
        self._namesrvs = [a.strip() for a in options.namesrv_addr.split(";") if a.strip()]
        # A plain loop driven by run_until_complete: asyncio.Runner.run would
        # install and remove a SIGINT handler on every call, which costs more
        # than a pull when Spark's worker runs us on its main thread.
        self._loop = loop_factory()()
        # With credentials the client's signing RemotingClient signs every request (plain ACL).
        creds = AclCredentials(options.access_key, options.secret_key) \
            if options.access_key and options.secret_key else None
        remoting = make_remoting_client(
            creds, connect_timeout=min(3.0, options.request_timeout_s),
            ssl_context=options.tls.client_context() if options.tls is not None else None,
        )
        self._api = MQClientAPI(remoting, options.request_timeout_s)
        self._routes: dict[str, TopicRoute] = {}
        self._closed = False

    # --- lifecycle ------------------------------------------------------------

    def close(self) -> None:
        """Close connections and the private loop; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.run_until_complete(self._api.remoting.close())
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        finally:
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- requests -------------------------------------------------------------

    def _run(self, call: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            call.close()
            raise ClientError("cluster connection is closed")
        return self._loop.run_until_complete(call)

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        """The topic's route from the first name server that answers; cached until `refresh`."""
        if not refresh and topic in self._routes:
            return self._routes[topic]
        last: Exception | None = None
        for addr in self._namesrvs:
            try:
                data = self._run(self._api.get_topic_route(addr, topic))
            except RemotingError as exc:
                last = exc
                continue
            except TopicNotExist:
                raise NoRouteError(f"topic {topic} is not known to the name server {addr}") from None
            route = spark_route(topic, data)
            self._routes[topic] = route
            return route
        raise ConnectError(f"no name server of {self._options.namesrv_addr} answered: {last}")

    def _master(self, q: QueueRef) -> str:
        addr = self.route(q.topic).masters.get(q.broker_name)
        if addr is None:
            addr = self.route(q.topic, refresh=True).masters.get(q.broker_name)
        if addr is None:
            raise NoRouteError(f"broker {q.broker_name} of topic {q.topic} has no master in the route")
        return addr

    def min_offset(self, q: QueueRef) -> int:
        # A broker may answer -1 for a queue it has never written; offsets start at 0.
        return max(0, self._run(self._api.get_min_offset(self._master(q), _mq(q))))

    def max_offset(self, q: QueueRef) -> int:
        """The next offset the queue will write (one past its last message)."""
        return max(0, self._run(self._api.get_max_offset(self._master(q), _mq(q))))

    def search_offset(self, q: QueueRef, timestamp_ms: int) -> int:
        """The broker's nearest offset to a store time (a hint; see positions.first_offset_at)."""
        return self._run(self._api.search_offset(self._master(q), _mq(q), timestamp_ms))

    def pull(self, q: QueueRef, offset: int, max_nums: int, *, group: str, subscription: str = "*",
             expression_type: str = "TAG") -> PullResult:
        """One pull at `offset` without long polling; never commits an offset."""
        return self.pull_many(q, [offset], max_nums, group=group, subscription=subscription,
                              expression_type=expression_type)[0]

    def pull_many(self, q: QueueRef, offsets: Sequence[int], max_nums: int, *, group: str,
                  subscription: str = "*", expression_type: str = "TAG") -> list[PullResult]:
        """Pulls at several offsets of one queue, in flight together; results in the order asked.

        A broker answers at most a few dozen messages per pull, so a reader
        that waits for each answer before asking again spends most of its
        time on round trips; this keeps several requests on the connection.
        Results carry their records undecoded in `message_binary`.
        """
        addr = self._master(q)
        mq = _mq(q)
        sub_version = int(time.time() * 1000)
        timeout = self._options.request_timeout_s

        async def all_of() -> list[PullResult]:
            return list(await asyncio.gather(*(
                self._api.pull(
                    addr, mq, group=group, offset=offset, max_nums=max_nums, sys_flag=PullSysFlag.SUBSCRIPTION,
                    commit_offset=0, suspend_ms=0, sub_expression=subscription, sub_version=sub_version,
                    expression_type=expression_type, timeout=timeout, decode=False,
                )
                for offset in offsets
            )))

        return self._run(all_of())

    def send_encoded(self, q: QueueRef, items: list[bytes], producer_group: str,
                     timeout: float | None = None) -> int:
        """Send already encoded batch items (reference 5.8) to one queue; the first queue offset.

        The broker stores the batch in order at consecutive offsets. Raises
        BrokerError on any answer but SUCCESS (flush or slave timeouts
        included: the caller retries, which is at-least-once).
        """
        header = SendMessageRequestHeader(
            producer_group=producer_group, topic=q.topic, default_topic=names.AUTO_CREATE_TOPIC_KEY_TOPIC,
            default_topic_queue_nums=4, queue_id=q.queue_id, sys_flag=0, born_timestamp=int(time.time() * 1000),
            flag=0, properties=mc.encode_properties({mc.WAIT_STORE_MSG_OK: "true"}), reconsume_times=0,
            unit_mode=False, batch=True, bname=q.broker_name,
        )
        wait = self._options.request_timeout_s if timeout is None else timeout
        resp = self._run(self._api.send(
            self._master(q), RequestCode.SEND_BATCH_MESSAGE, header.to_compact_fields(), items, wait))
        if resp.code != ResponseCode.SUCCESS:
            raise BrokerError.for_code(resp.code, resp.remark)
        return int((resp.ext_fields or {}).get("queueOffset", -1))

    def update_consumer_offset(self, group: str, q: QueueRef, offset: int) -> None:
        """Report a group's position for a queue (for lag tools; the source never reads it back)."""
        self._run(self._api.update_consumer_offset(self._master(q), group, _mq(q), offset, oneway=False))
