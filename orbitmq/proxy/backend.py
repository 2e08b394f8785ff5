"""The proxy's remoting side: routes from the NameServer, broker metadata, and one remoting client
per ACL account (requests are signed with the account the gRPC caller proved, so the brokers'
own ACL rules apply to gRPC clients as to 4.x ones).

Caches are short-lived (a few seconds): a topic made or changed with `orbitmq admin` is seen by
gRPC clients within that time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from orbitmq.client.api import MQClientAPI
from orbitmq.common import jsonbody
from orbitmq.common.route import TopicRouteData
from orbitmq.common.subscription_group import SubscriptionGroupConfig
from orbitmq.errors import BrokerError, OrbitMQError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.local import LocalDispatch
from orbitmq.remoting.signing import AclCredentials, make_remoting_client
from orbitmq.remoting.transport import RemotingClient

log = logging.getLogger(__name__)

#: Seconds a route or a broker's topic/group table is reused.
CACHE_SECONDS = 3.0
#: The ACL account of the gRPC call being served (set per call; its task and the tasks it starts
#: see it): route and table lookups are signed with it, like the call's own requests.
CALLER: ContextVar[AclCredentials | None] = ContextVar("orbitmq_proxy_caller", default=None)


@dataclass(frozen=True, slots=True)
class BrokerMeta:
    """What the proxy needs of a broker's tables: topic attributes, orderly groups and group configs
    (retryMaxTimes and groupRetryPolicy make a consumer's Settings)."""

    topic_attributes: Mapping[str, Mapping[str, str]]
    orderly_groups: frozenset[str]
    groups: frozenset[str]
    group_configs: Mapping[str, SubscriptionGroupConfig] = field(default_factory=dict)


class Backend:
    def __init__(self, namesrv_addrs: list[str], timeout: float = 3.0, ssl_context: Any = None,
                 local: LocalDispatch | None = None) -> None:
        if not namesrv_addrs:
            raise OrbitMQError("the proxy needs a NameServer address")
        self.namesrv_addrs = namesrv_addrs
        #: The broker this front runs in (local mode): the requests of `api()` to its address are
        #: served in-process (orbitmq/remoting/local.py).
        self.local = local
        self.timeout = timeout
        self.ssl_context = ssl_context
        self._clients: dict[str | None, MQClientAPI] = {}
        self._routes: dict[str, tuple[float, TopicRouteData]] = {}
        self._meta: dict[str, tuple[float, BrokerMeta]] = {}
        self._meta_lock: dict[str, asyncio.Lock] = {}
        self._ns_index = 0
        #: broker address -> broker name, learnt from routes.
        self.broker_names: dict[str, str] = {}

    def api(self, creds: AclCredentials | None) -> MQClientAPI:
        key = None if creds is None else creds.access_key
        api = self._clients.get(key)
        if api is None:
            remoting = self.new_remoting(creds)
            if self.local is not None:
                remoting.local = self.local.channel()
            api = self._clients[key] = MQClientAPI(remoting, self.timeout)
        return api

    def new_remoting(self, creds: AclCredentials | None) -> RemotingClient:
        """A remoting client (requests signed with `creds`); the gRPC clients' registrations
        use these, never the in-process path: the broker calls them back over the connection."""
        return make_remoting_client(creds, connect_timeout=3.0, ssl_context=self.ssl_context)

    async def route(self, topic: str) -> TopicRouteData:
        """The topic's route (`TopicNotExist` when no broker serves it)."""
        cached = self._routes.get(topic)
        now = time.monotonic()
        if cached is not None and now - cached[0] < CACHE_SECONDS:
            return cached[1]
        last: Exception | None = None
        for _ in range(len(self.namesrv_addrs)):
            addr = self.namesrv_addrs[self._ns_index % len(self.namesrv_addrs)]
            try:
                route = await self.api(CALLER.get()).get_topic_route(addr, topic)
            except BrokerError:
                raise
            except OrbitMQError as exc:
                last = exc
                self._ns_index += 1
                continue
            self._routes[topic] = (now, route)
            for bd in route.broker_datas:
                for a in bd.broker_addrs.values():
                    self.broker_names[a] = bd.broker_name
            return route
        raise last if last is not None else OrbitMQError("no NameServer answered")

    async def master_addr(self, topic: str, broker_name: str) -> str | None:
        route = await self.route(topic)
        for bd in route.broker_datas:
            if bd.broker_name == broker_name:
                return bd.master_addr
        return None

    async def meta(self, addr: str) -> BrokerMeta:
        cached = self._meta.get(addr)
        if cached is not None and time.monotonic() - cached[0] < CACHE_SECONDS:
            return cached[1]
        lock = self._meta_lock.setdefault(addr, asyncio.Lock())
        async with lock:
            cached = self._meta.get(addr)
            if cached is not None and time.monotonic() - cached[0] < CACHE_SECONDS:
                return cached[1]
            meta, complete = await self._fetch_meta(addr)
            if complete:  # a refused or failed read is tried again by the next call
                self._meta[addr] = (time.monotonic(), meta)
            return meta

    async def _fetch_meta(self, addr: str) -> tuple[BrokerMeta, bool]:
        api = self.api(CALLER.get())
        complete = False
        attributes: dict[str, dict[str, str]] = {}
        orderly: set[str] = set()
        groups: set[str] = set()
        configs: dict[str, SubscriptionGroupConfig] = {}
        try:
            resp = await api.invoke(addr, RequestCode.GET_ALL_TOPIC_CONFIG)
            topics_read = resp.code == ResponseCode.SUCCESS
            if topics_read and resp.body_bytes():
                table = jsonbody.loads(resp.body_bytes()).get("topicConfigTable") or {}
                for name, tc in table.items():
                    attrs = tc.get("attributes") if isinstance(tc, dict) else None
                    if isinstance(attrs, dict) and attrs:
                        attributes[str(name)] = {str(k): str(v) for k, v in attrs.items()}
            resp = await api.invoke(addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
            complete = topics_read and resp.code == ResponseCode.SUCCESS
            if complete and resp.body_bytes():
                table = jsonbody.loads(resp.body_bytes()).get("subscriptionGroupTable") or {}
                for name, gc in table.items():
                    groups.add(str(name))
                    if isinstance(gc, dict) and gc.get("consumeMessageOrderly"):
                        orderly.add(str(name))
                    try:
                        configs[str(name)] = SubscriptionGroupConfig.from_json({"groupName": str(name), **gc})
                    except (ValueError, TypeError):
                        log.warning("broker %s lists an unreadable config of group %s", addr, name)
        except (OrbitMQError, ValueError, AttributeError) as exc:
            log.warning("cannot read the topic and group tables of %s: %s", addr, exc)
        return BrokerMeta(attributes, frozenset(orderly), frozenset(groups), configs), complete

    def forget(self, topic: str) -> None:
        self._routes.pop(topic, None)

    async def close(self) -> None:
        for api in self._clients.values():
            await api.remoting.close()
        self._clients.clear()
