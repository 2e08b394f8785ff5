"""ClientInstance: what the producers and consumers of one client id share.

One instance per (event loop, client id), shared by every producer and
consumer created with the same configuration in that loop (the blocking
facade runs all its clients in one background loop, so they share one too).
It owns:

* the remoting client (one connection per broker and NameServer);
* the NameServer list, used with failover: the last one that answered is
  asked first, the others in turn when it fails;
* topic routes, refreshed every 30 s, and the broker address table;
* heartbeats to brokers every 30 s (and at once when a consumer starts);
* the consumers' periodic work: rebalance every 20 s or when a broker sends
  NOTIFY_CONSUMER_IDS_CHANGED, offset persistence every 5 s;
* clean shutdown: UNREGISTER_CLIENT for each group, then close connections.

All state is owned by the event loop the instance was created in.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, ClassVar, Protocol

from orbitmq.client.acl import AclCredentials, make_remoting_client
from orbitmq.client.api import MQClientAPI
from orbitmq.client.config import ClientConfig
from orbitmq.client.queue import MessageQueue
from orbitmq.client.replies import ReplyWaiters
from orbitmq.client.routes import (
    MASTER_ID,
    TopicPublishInfo,
    TopicRouteData,
    default_topic_route_for,
    publish_queues,
    subscribe_queues,
)
from orbitmq.client.running_info import on_consume_message_directly, on_get_consumer_running_info
from orbitmq.client.tasks import cancel_and_wait, sleep_or_wake
from orbitmq.client.transaction_check import on_check_transaction_state
from orbitmq.common.filter import EXPRESSION_TAG, SubscriptionData
from orbitmq.common.message import Message
from orbitmq.errors import BrokerError, ClientError, NoRouteError, OrbitMQError, RemotingError, TopicNotExist
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.headers import ResetOffsetRequestHeader
from orbitmq.remoting.transport import RemotingClient

log = logging.getLogger(__name__)

CLIENT_INNER_PRODUCER = "CLIENT_INNER_PRODUCER"
_PROCESS_INSTANCE = f"{os.getpid()}#{time.monotonic_ns()}"


#: Broker answers that say the broker asked is not (or no longer) its group's serving master.
FAILOVER_CODES = frozenset({ResponseCode.SERVICE_NOT_AVAILABLE, ResponseCode.SLAVE_NOT_AVAILABLE})


def broker_gone(exc: BaseException) -> bool:
    """Whether a failed request suggests a failover: the broker cannot be reached (connection
    refused or reset, timeout), the client knows no address for it ("broker not exist"), or it
    answered SERVICE_NOT_AVAILABLE / SLAVE_NOT_AVAILABLE."""
    if isinstance(exc, RemotingError):
        return True
    if isinstance(exc, BrokerError):
        return exc.code in FAILOVER_CODES
    return isinstance(exc, ClientError) and "not exist" in str(exc)


def local_ip() -> str:
    """A non-loopback local IPv4 address when one exists (no packet is sent), else 127.0.0.1."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            ip = str(s.getsockname()[0])
            if not ip.startswith("127.") and ip != "0.0.0.0":
                return ip
    except OSError:
        pass
    return "127.0.0.1"


def build_client_id(config: ClientConfig) -> str:
    """`ip@instanceName[@unitName]` (§6.1); "DEFAULT" becomes `<pid>#<start ns>` for the process."""
    name = _PROCESS_INSTANCE if config.instance_name == "DEFAULT" else config.instance_name
    cid = f"{config.client_ip or local_ip()}@{name}"
    if config.unit_name:
        cid += f"@{config.unit_name}"
    return cid


class ProducerMember(Protocol):
    group: str

    def publish_topics(self) -> set[str]: ...


class InnerProducer(Protocol):
    """The instance's own producer (group CLIENT_INNER_PRODUCER) as the instance sees it."""

    async def send(self, msg: Message) -> Any: ...

    async def shutdown(self) -> None: ...


#: Builds and starts the inner producer for an instance's configuration (`producer.start_inner_producer`).
InnerProducerFactory = Callable[[ClientConfig], Awaitable[InnerProducer]]


class ConsumerMember(Protocol):
    group: str

    def heartbeat_data(self) -> dict[str, Any]: ...
    def subscribed_topics(self) -> set[str]: ...
    async def rebalance(self) -> None: ...
    async def persist_offsets(self) -> None: ...
    async def on_offset_reset(self, topic: str, offsets: dict[MessageQueue, int]) -> None: ...


class ClientInstance:
    _registry: ClassVar[dict[tuple[int, str], ClientInstance]] = {}

    def __init__(self, config: ClientConfig, client_id: str) -> None:
        self.config = config
        self.client_id = client_id
        self.namesrv_addrs = [a.strip() for a in config.namesrv_addr.split(";") if a.strip()]
        if not self.namesrv_addrs:
            raise ClientError("no NameServer address configured (namesrv_addr)")
        self._namesrv_index = 0
        timeout = config.mq_client_api_timeout_ms / 1000
        #: Plain ACL credentials (client/acl.py); the remoting client signs every request with them.
        self.acl_credentials = AclCredentials.from_options(
            config.access_key, config.secret_key, config.security_token, config.signature_version
        )
        self.remoting: RemotingClient = make_remoting_client(
            self.acl_credentials, connect_timeout=3.0, ssl_context=config.ssl_context()
        )
        if config.rpc_hook is not None:
            self.remoting.add_rpc_hook(config.rpc_hook)  # before the ACL signing hook, which signs last
        self.api = MQClientAPI(self.remoting, timeout)
        self.routes: dict[str, TopicRouteData] = {}
        #: Topic -> when a failure last made its route be looked up again (monotonic s).
        self._route_refreshed: dict[str, float] = {}
        self._route_refreshes: set[asyncio.Task[None]] = set()
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self.publish_infos: dict[str, TopicPublishInfo] = {}
        self.producers: dict[str, ProducerMember] = {}
        self.consumers: dict[str, ConsumerMember] = {}
        self._users = 0
        self._inner_producer: InnerProducer | None = None
        self._inner_producer_lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._rebalance_now = asyncio.Event()
        self._heartbeat_lock = asyncio.Lock()
        self._route_lock = asyncio.Lock()
        self.remoting.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, self._on_ids_changed)
        self.remoting.register(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, self._on_reset_offset)
        # Broker-to-client requests of request-reply and transactions (request_reply.py, transaction_check.py).
        self.replies = ReplyWaiters()
        self.remoting.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self.replies.on_push_reply)
        self.remoting.register(
            RequestCode.CHECK_TRANSACTION_STATE, functools.partial(on_check_transaction_state, self.producers)
        )
        # Admin questions the broker forwards to a consumer group (running_info.py).
        self.remoting.register(
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            functools.partial(on_get_consumer_running_info, self.consumers, self.namesrv_addrs),
        )
        self.remoting.register(
            RequestCode.CONSUME_MESSAGE_DIRECTLY, functools.partial(on_consume_message_directly, self.consumers)
        )

    # --- sharing ------------------------------------------------------------------

    @classmethod
    async def acquire(cls, config: ClientConfig) -> ClientInstance:
        """The shared instance for this loop and client id, started on first use."""
        loop = asyncio.get_running_loop()
        client_id = build_client_id(config)
        key = (id(loop), client_id)
        inst = cls._registry.get(key)
        if inst is None:
            inst = cls(config, client_id)
            cls._registry[key] = inst
            inst._start()
        inst._users += 1
        return inst

    async def release(self) -> None:
        """Drop one user; the last one stops the instance and closes its connections."""
        self._users -= 1
        if self._users == 1 and self._inner_producer is not None:
            # Only the internal producer is left: stop it, which releases the last use.
            inner, self._inner_producer = self._inner_producer, None
            await inner.shutdown()
            return
        if self._users > 0:
            return
        loop = asyncio.get_running_loop()
        self._registry.pop((id(loop), self.client_id), None)
        await cancel_and_wait(self._tasks)
        self._tasks.clear()
        await cancel_and_wait(list(self._route_refreshes))
        await self.remoting.close()

    def _start(self) -> None:
        c = self.config
        self._spawn(self._every(c.poll_name_server_interval_ms, 0.01, self.refresh_routes))
        self._spawn(self._every(c.heartbeat_broker_interval_ms, 1.0, self.send_heartbeat_to_all))
        self._spawn(self._every(c.persist_consumer_offset_interval_ms, 10.0, self._persist_all))
        self._spawn(self._rebalance_loop())

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.append(task)
        task.add_done_callback(lambda t: self._tasks.remove(t) if t in self._tasks else None)

    async def _every(self, interval_ms: int, first_delay_s: float, job: Callable[[], Awaitable[Any]]) -> None:
        await asyncio.sleep(first_delay_s)
        while True:
            try:
                await job()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("periodic client job %s failed", getattr(job, "__name__", job))
            await asyncio.sleep(interval_ms / 1000)

    # --- members ------------------------------------------------------------------

    def register_producer(self, member: ProducerMember) -> None:
        if member.group in self.producers:
            raise ClientError(
                f"the producer group [{member.group}] has been created before in client {self.client_id}; "
                "give each producer of one group its own instance_name"
            )
        self.producers[member.group] = member

    def register_consumer(self, member: ConsumerMember) -> None:
        if member.group in self.consumers:
            raise ClientError(
                f"the consumer group [{member.group}] has been created before in client {self.client_id}; "
                "give each member of one group its own instance_name"
            )
        self.consumers[member.group] = member

    async def unregister(self, producer_group: str | None = None, consumer_group: str | None = None) -> None:
        """Forget a member and tell every broker (UNREGISTER_CLIENT), best effort."""
        if producer_group:
            self.producers.pop(producer_group, None)
        if consumer_group:
            self.consumers.pop(consumer_group, None)
        for addrs in list(self.broker_addrs.values()):
            for addr in addrs.values():
                try:
                    await self.api.unregister_client(addr, self.client_id, producer_group, consumer_group)
                except (RemotingError, BrokerError) as exc:
                    log.info("unregister of %s from %s failed: %s", producer_group or consumer_group, addr, exc)

    async def inner_producer(self, start: InnerProducerFactory) -> InnerProducer:
        """The instance's own producer (group CLIENT_INNER_PRODUCER) for resending failed messages.

        Made by `start` on first use and shared by every consumer of the
        instance; the instance stops it when its last other user leaves.
        """
        async with self._inner_producer_lock:
            if self._inner_producer is None:
                self._inner_producer = await start(self.config)
            return self._inner_producer

    # --- NameServer and routes -------------------------------------------------

    async def fetch_route(self, topic: str, timeout: float | None = None) -> TopicRouteData:
        """Ask the NameServers in failover order; `TopicNotExist` when none knows the topic."""
        last: Exception | None = None
        n = len(self.namesrv_addrs)
        for i in range(n):
            index = (self._namesrv_index + i) % n
            try:
                route = await self.api.get_topic_route(self.namesrv_addrs[index], topic, timeout)
            except RemotingError as exc:
                last = exc
                continue
            self._namesrv_index = index
            return route
        raise NoRouteError(f"no NameServer answered for topic {topic}: {last}")

    async def update_route(self, topic: str) -> TopicRouteData | None:
        """Refresh one topic's route; None when the NameServers do not know it."""
        try:
            route = await self.fetch_route(topic)
        except TopicNotExist:
            return None
        self._install_route(topic, route)
        return route

    def refresh_route_soon(self, topic: str) -> None:
        """A broker of `topic` is gone or no longer its group's master (failover): look the route
        up again now, in the background, rather than at the next periodic poll; at most once a
        second per topic."""
        now = time.monotonic()
        if now - self._route_refreshed.get(topic, -1e9) < 1.0:
            return
        self._route_refreshed[topic] = now

        async def refresh() -> None:
            before = self._masters(topic)
            try:
                await self.update_route(topic)
            except OrbitMQError:
                return  # the next failure or the periodic poll tries again
            if self.consumers and self._tasks and self._masters(topic) != before:
                # A new master: rebalance now so that queues go on there (and orderly ones lock there).
                self.trigger_rebalance()

        task = asyncio.ensure_future(refresh())
        self._route_refreshes.add(task)
        task.add_done_callback(self._route_refreshes.discard)

    def failed_over(self, topic: str, exc: BaseException) -> None:
        """A request about `topic` failed: when the failure says its broker is gone or not (or no
        longer) a master, look the route up again soon (`refresh_route_soon`), as sends do."""
        if broker_gone(exc):
            self.refresh_route_soon(topic)

    def _masters(self, topic: str) -> dict[str, str | None]:
        route = self.routes.get(topic)
        if route is None:
            return {}
        return {b.broker_name: b.broker_addrs.get(MASTER_ID) for b in route.broker_datas}

    def _install_route(self, topic: str, route: TopicRouteData) -> None:
        self.routes[topic] = route
        known = {addr for addrs in self.broker_addrs.values() for addr in addrs.values()}
        for b in route.broker_datas:
            self.broker_addrs[b.broker_name] = dict(b.broker_addrs)
        fresh = any(addr not in known for b in route.broker_datas for addr in b.broker_addrs.values())
        if fresh and self.consumers and self._tasks:
            # A broker we never told about our consumers: heartbeat now (not at the next 30 s tick)
            # so that it lists them when the group rebalances.
            self._spawn(self._heartbeat_then_rebalance())
        info = publish_queues(topic, route)
        old = self.publish_infos.get(topic)
        if old is not None:
            info.counter = old.counter
        self.publish_infos[topic] = info

    async def refresh_routes(self) -> None:
        """Refresh every topic a member uses (the 30 s route poll)."""
        topics: set[str] = set()
        for p in self.producers.values():
            topics |= p.publish_topics()
        for c in self.consumers.values():
            topics |= c.subscribed_topics()
        for topic in sorted(topics):
            try:
                await self.update_route(topic)
            except (RemotingError, BrokerError, ClientError) as exc:
                log.warning("route refresh of %s failed: %s", topic, exc)
        self.clean_offline_brokers()

    def clean_offline_brokers(self) -> None:
        """Forget broker addresses that no cached route lists any more (Java's cleanOfflineBroker).

        A broker that stopped is dropped from the NameServer's routes; without
        this its address would stay here and get heartbeats and UNREGISTER_CLIENT
        requests for ever. A broker name with no address left goes too.
        """
        live = {addr for route in self.routes.values() for b in route.broker_datas for addr in b.broker_addrs.values()}
        for name, addrs in list(self.broker_addrs.items()):
            kept = {broker_id: addr for broker_id, addr in addrs.items() if addr in live}
            if len(kept) == len(addrs):
                continue
            log.info("broker %s: forgetting offline addresses %s", name, sorted(set(addrs.values()) - set(kept.values())))
            if kept:
                self.broker_addrs[name] = kept
            else:
                del self.broker_addrs[name]

    async def publish_info(self, topic: str, default_topic: str, default_queue_nums: int) -> TopicPublishInfo:
        """Where a producer may write `topic`; falls back to the template topic for auto-creation."""
        info = self.publish_infos.get(topic)
        if info is not None and info.ok:
            return info
        async with self._route_lock:
            if await self.update_route(topic) is not None and self.publish_infos[topic].ok:
                return self.publish_infos[topic]
            try:
                template = await self.fetch_route(default_topic)
            except TopicNotExist:
                raise NoRouteError(f"No route info of this topic: {topic}") from None
            route = default_topic_route_for(template, default_queue_nums)
            for b in route.broker_datas:
                self.broker_addrs[b.broker_name] = dict(b.broker_addrs)
            info = publish_queues(topic, route)
            if not info.ok:
                raise NoRouteError(f"No route info of this topic: {topic}")
            # Not cached: the next send asks again and finds the real route once the broker created it.
            return info

    async def subscribe_queues(self, topic: str) -> set[MessageQueue]:
        route = self.routes.get(topic) or await self.update_route(topic)
        if route is None:
            raise NoRouteError(f"Can not find Message Queue for this topic, {topic}")
        return subscribe_queues(topic, route)

    def master_addr(self, broker_name: str) -> str | None:
        return self.broker_addrs.get(broker_name, {}).get(MASTER_ID)

    def broker_addr(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        """The address of `broker_id` in `broker_name`, else its master, else any of its brokers."""
        addrs = self.broker_addrs.get(broker_name, {})
        return addrs.get(broker_id) or addrs.get(MASTER_ID) or next(iter(addrs.values()), None)

    async def find_master_addr(self, broker_name: str, topic: str) -> str:
        addr = self.master_addr(broker_name)
        if addr is None:
            await self.update_route(topic)
            addr = self.master_addr(broker_name)
        if addr is None:
            raise NoRouteError(f"The broker[{broker_name}] not exist")
        return addr

    async def find_broker_addr_in_admin(self, broker_name: str, topic: str) -> str:
        """The master of `broker_name`, else any broker of it (a slave while the master is down),
        refreshing the route once when none is known (MQClientInstance.findBrokerAddressInAdmin as
        RemoteBrokerOffsetStore uses it). For offset questions, which a slave answers too."""
        addr = self.broker_addr(broker_name)
        if addr is None:
            await self.update_route(topic)
            addr = self.broker_addr(broker_name)
        if addr is None:
            raise NoRouteError(f"The broker[{broker_name}] not exist")
        return addr

    async def any_broker_addr(self, topic: str) -> str:
        """Some broker serving `topic` (for group-wide questions like the consumer id list)."""
        route = self.routes.get(topic) or await self.update_route(topic)
        if route is not None:
            for b in route.broker_datas:
                addr = b.select_addr()
                if addr:
                    return addr
        raise NoRouteError(f"no broker serves topic {topic}")

    async def check_client_in_broker(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """Before a consumer starts, ask a broker of each non-TAG subscription's topic whether it
        can run the filter (MQClientInstance.checkClientInBroker). A refusal (say SQL92 on a broker
        with enablePropertyFilter=false) raises `BrokerError` with the broker's code and remark."""
        for sub in subscriptions:
            if (sub.expression_type or EXPRESSION_TAG).upper() == EXPRESSION_TAG:
                continue
            try:
                addr = await self.any_broker_addr(sub.topic)
            except (NoRouteError, RemotingError, BrokerError):
                continue  # no broker known for the topic: nothing to ask (as Java skips a null address)
            try:
                await self.api.check_client_config(addr, group, self.client_id, sub.to_json_dict())
            except RemotingError as exc:
                raise ClientError(
                    f"Check client in broker error, maybe because you use {sub.expression_type} to filter "
                    f"message, but server has not been upgraded to support! ({exc})"
                ) from exc

    # --- heartbeats -------------------------------------------------------------

    def heartbeat_data(self) -> dict[str, Any]:
        groups = set(self.producers) | {CLIENT_INNER_PRODUCER}
        producers = [{"groupName": g} for g in sorted(groups)]
        return {
            "clientID": self.client_id,
            "consumerDataSet": [c.heartbeat_data() for c in self.consumers.values()],
            "producerDataSet": producers,
        }

    async def send_heartbeat_to_all(self) -> None:
        """HEART_BEAT to every known broker (masters only when there is no consumer)."""
        if not self.producers and not self.consumers:
            return
        async with self._heartbeat_lock:
            data = self.heartbeat_data()
            for name, addrs in list(self.broker_addrs.items()):
                for broker_id, addr in addrs.items():
                    if broker_id != MASTER_ID and not self.consumers:
                        continue
                    try:
                        await self.api.send_heartbeat(addr, data)
                    except (RemotingError, BrokerError) as exc:
                        log.warning("heartbeat to %s (%s) failed: %s", name, addr, exc)

    async def _heartbeat_then_rebalance(self) -> None:
        await self.send_heartbeat_to_all()
        self.trigger_rebalance()

    # --- consumer duties ------------------------------------------------------------

    def trigger_rebalance(self) -> None:
        self._rebalance_now.set()

    async def _rebalance_loop(self) -> None:
        interval = getattr(self.config, "rebalance_interval_ms", 20_000) / 1000
        while True:
            await sleep_or_wake(self._rebalance_now, interval)
            self._rebalance_now.clear()
            for consumer in list(self.consumers.values()):
                try:
                    await consumer.rebalance()
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("rebalance of group %s failed", consumer.group)

    async def _persist_all(self) -> None:
        for consumer in list(self.consumers.values()):
            await consumer.persist_offsets()

    async def _on_ids_changed(self, request: RemotingCommand, peer: Peer) -> RemotingCommand | None:
        log.info("broker %s: consumer ids of %s changed; rebalancing", peer.addr, request.field("consumerGroup"))
        self.trigger_rebalance()
        return None

    async def _on_reset_offset(self, request: RemotingCommand, peer: Peer) -> RemotingCommand | None:
        from orbitmq.client.offset_reset import parse_reset_body

        header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
        consumer = self.consumers.get(header.group)
        if consumer is not None and request.body is not None:
            await consumer.on_offset_reset(header.topic, parse_reset_body(request.body_bytes()))
        return None if request.is_oneway else request.response()
