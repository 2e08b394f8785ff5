"""Blocking access to an OrbitMQ (or RocketMQ 4.x) cluster for Spark's Python processes.

Spark calls the data source from short-lived planner processes, one
long-lived stream-reader process and many task processes; none of them runs
an event loop. `Cluster` owns a private event loop and a
`RemotingClient` on it, and exposes the handful of requests the connector
needs as plain blocking calls: routes, queue offset bounds, search by time,
pull at an offset, batch send and offset reports. One `Cluster` serves one
process (or one task) and is closed by its owner; asyncio objects never
cross a process boundary.

When credentials are configured every request is signed (plain ACL, by
the client's `acl.SigningRemotingClient`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from types import TracebackType
from typing import Self

from orbitmq.client.acl import AclCredentials, make_remoting_client
from orbitmq.client.routes import PERM_READ, PERM_WRITE, TopicRouteData
from orbitmq.errors import BrokerError, ClientError, ConnectError, NoRouteError, RemotingError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import Body, RemotingCommand
from orbitmq.remoting.header_base import CommandHeader
from orbitmq.remoting.headers import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeaderV2,
    UpdateConsumerOffsetRequestHeader,
)
from orbitmq.remoting.loop import loop_factory
from orbitmq.remoting.transport import RemotingClient
from orbitmq.spark.offsets import QueueRef
from orbitmq.spark.options import ConnectionOptions

PULL_FLAG_SUBSCRIPTION = 0x4  # the broker builds the subscription from this request
DEFAULT_TOPIC = "TBW102"  # RocketMQ's auto-create template topic, sent in every send header


class PullStatus(Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"  # offset == max offset
    NO_MATCHED_MSG = "NO_MATCHED_MSG"  # scanned entries matched no filter; continue at next_offset
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"  # below min or past max; next_offset is the broker's correction


@dataclass(frozen=True, slots=True)
class PullResult:
    status: PullStatus
    next_offset: int
    min_offset: int
    max_offset: int
    body: bytes


@dataclass(frozen=True)
class TopicRoute:
    """Where a topic lives: master address per broker and its readable and writable queues."""

    topic: str
    masters: dict[str, str]
    read_queues: tuple[QueueRef, ...]
    write_queues: tuple[QueueRef, ...]


def parse_route(topic: str, body: bytes) -> TopicRoute:
    """Read a TopicRouteData body (protocol reference 4.2), in fastjson or standard form.

    Only brokers with a registered master count: the connector reads and
    writes masters alone. Raises ClientError for a malformed body.
    """
    route = TopicRouteData.parse(body)
    masters = {b.broker_name: addr for b in route.broker_datas if (addr := b.master_addr()) is not None}
    reads: list[QueueRef] = []
    writes: list[QueueRef] = []
    for qd in route.queue_datas:
        if qd.broker_name not in masters:
            continue  # no master registered: neither readable here nor writable
        if qd.perm & PERM_READ:
            reads += [QueueRef(topic, qd.broker_name, i) for i in range(qd.read_queue_nums)]
        if qd.perm & PERM_WRITE:
            writes += [QueueRef(topic, qd.broker_name, i) for i in range(qd.write_queue_nums)]
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
        self._client: RemotingClient = make_remoting_client(
            creds, connect_timeout=min(3.0, options.request_timeout_s),
            ssl_context=options.tls.client_context() if options.tls is not None else None,
        )
        self._routes: dict[str, TopicRoute] = {}
        self._closed = False

    # --- lifecycle ------------------------------------------------------------

    def close(self) -> None:
        """Close connections and the private loop; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self._loop.run_until_complete(self._client.close())
            self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        finally:
            self._loop.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- requests -------------------------------------------------------------

    @staticmethod
    def _request(code: int, header: CommandHeader, body: bytes | list[bytes] | None = None) -> RemotingCommand:
        return RemotingCommand.request(code, header.to_ext_fields(), body)

    def _invoke(self, addr: str, code: int, header: CommandHeader, body: bytes | list[bytes] | None = None,
                timeout: float | None = None) -> RemotingCommand:
        if self._closed:
            raise ClientError("cluster connection is closed")
        cmd = self._request(code, header, body)
        wait = self._options.request_timeout_s if timeout is None else timeout
        return self._loop.run_until_complete(self._client.invoke(addr, cmd, wait))

    def route(self, topic: str, *, refresh: bool = False) -> TopicRoute:
        """The topic's route from the first name server that answers; cached until `refresh`."""
        if not refresh and topic in self._routes:
            return self._routes[topic]
        last: Exception | None = None
        for addr in self._namesrvs:
            try:
                resp = self._invoke(addr, RequestCode.GET_ROUTEINFO_BY_TOPIC,
                                    GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=True))
            except RemotingError as exc:
                last = exc
                continue
            if resp.code == ResponseCode.TOPIC_NOT_EXIST:
                raise NoRouteError(f"topic {topic} is not known to the name server {addr}")
            if resp.code != ResponseCode.SUCCESS:
                raise BrokerError.for_code(resp.code, resp.remark)
            route = parse_route(topic, _bytes(resp.body))
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

    def _offset_call(self, code: int, q: QueueRef, header: CommandHeader) -> int:
        resp = self._invoke(self._master(q), code, header)
        if resp.code != ResponseCode.SUCCESS:
            raise BrokerError.for_code(resp.code, resp.remark)
        # The three offset answers share one shape: a single `offset` field.
        return GetMaxOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset

    def min_offset(self, q: QueueRef) -> int:
        # A broker may answer -1 for a queue it has never written; offsets start at 0.
        header = GetMinOffsetRequestHeader(topic=q.topic, queue_id=q.queue_id, bname=q.broker_name)
        return max(0, self._offset_call(RequestCode.GET_MIN_OFFSET, q, header))

    def max_offset(self, q: QueueRef) -> int:
        """The next offset the queue will write (one past its last message)."""
        header = GetMaxOffsetRequestHeader(topic=q.topic, queue_id=q.queue_id, bname=q.broker_name)
        return max(0, self._offset_call(RequestCode.GET_MAX_OFFSET, q, header))

    def search_offset(self, q: QueueRef, timestamp_ms: int) -> int:
        """The broker's nearest offset to a store time (a hint; see positions.first_offset_at)."""
        header = SearchOffsetRequestHeader(topic=q.topic, queue_id=q.queue_id, timestamp=timestamp_ms,
                                           bname=q.broker_name)
        return self._offset_call(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, q, header)

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
        """
        if self._closed:
            raise ClientError("cluster connection is closed")
        addr = self._master(q)
        sub_version = int(time.time() * 1000)
        cmds = [
            self._request(RequestCode.PULL_MESSAGE, PullMessageRequestHeader(
                consumer_group=group, topic=q.topic, queue_id=q.queue_id, queue_offset=offset,
                max_msg_nums=max_nums, sys_flag=PULL_FLAG_SUBSCRIPTION, commit_offset=0, suspend_timeout_millis=0,
                sub_version=sub_version, subscription=subscription, expression_type=expression_type,
                bname=q.broker_name,
            ))
            for offset in offsets
        ]
        timeout = self._options.request_timeout_s

        async def all_of() -> list[RemotingCommand]:
            return list(await asyncio.gather(*(self._client.invoke(addr, c, timeout) for c in cmds)))

        return [_pull_result(resp, offset) for resp, offset in zip(self._loop.run_until_complete(all_of()), offsets, strict=True)]

    def send_encoded(self, q: QueueRef, items: list[bytes], producer_group: str,
                     timeout: float | None = None) -> int:
        """Send already encoded batch items (reference 5.8) to one queue; the first queue offset.

        The broker stores the batch in order at consecutive offsets. Raises
        BrokerError on any answer but SUCCESS (flush or slave timeouts
        included: the caller retries, which is at-least-once).
        """
        header = SendMessageRequestHeaderV2(
            a=producer_group, b=q.topic, c=DEFAULT_TOPIC, d=4, e=q.queue_id, f=0, g=int(time.time() * 1000),
            h=0, i="WAIT\x01true", j=0, k=False, m=True, n=q.broker_name,
        )
        resp = self._invoke(self._master(q), RequestCode.SEND_BATCH_MESSAGE, header, items, timeout)
        if resp.code != ResponseCode.SUCCESS:
            raise BrokerError.for_code(resp.code, resp.remark)
        return int((resp.ext_fields or {}).get("queueOffset", -1))

    def update_consumer_offset(self, group: str, q: QueueRef, offset: int) -> None:
        """Report a group's position for a queue (for lag tools; the source never reads it back)."""
        header = UpdateConsumerOffsetRequestHeader(consumer_group=group, topic=q.topic, queue_id=q.queue_id,
                                                   commit_offset=offset, bname=q.broker_name)
        resp = self._invoke(self._master(q), RequestCode.UPDATE_CONSUMER_OFFSET, header)
        if resp.code != ResponseCode.SUCCESS:
            raise BrokerError.for_code(resp.code, resp.remark)


def _pull_result(resp: RemotingCommand, offset: int) -> PullResult:
    status = _PULL_CODES.get(resp.code)
    if status is None:
        raise BrokerError.for_code(resp.code, resp.remark)
    ext = resp.ext_fields or {}
    return PullResult(
        status,
        int(ext.get("nextBeginOffset", offset)),
        int(ext.get("minOffset", 0)),
        int(ext.get("maxOffset", 0)),
        _bytes(resp.body) if status is PullStatus.FOUND else b"",
    )


_PULL_CODES: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


def _bytes(body: Body) -> bytes:
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    return b"".join(bytes(part) for part in body)
