"""Broker: wires the store, the managers, the request handlers, the remoting server,
NameServer registration and the periodic tasks.

    broker = Broker(config)
    host, port = await broker.start()     # bound address, port 0 resolved
    ...
    await broker.close()                  # or: async with Broker(config) as broker

Start order: open and recover the store, load the metadata files, create the
system topics, start listening, register with the NameServers, start the
periodic tasks. Shutdown order: refuse new requests, unregister from the
NameServers, wake long polls and drain in-flight requests (bounded by
shutdown_drain_seconds), close the listener and connections, write the
metadata files (consumer offsets included), close the store.

All state belongs to the event loop that ran `start()`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import ssl
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self

from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.handlers import AclHandlers
from orbitmq.broker.acl.validator import AclValidator
from orbitmq.broker.config import BrokerConfig, LiveConfig
from orbitmq.broker.consumers import ConsumerRegistry
from orbitmq.broker.dedup import SendDeduplicator
from orbitmq.broker.diskstate import DISK_FULL_REMARK, WriteHealth, is_disk_full
from orbitmq.broker.ha import Replication
from orbitmq.broker.ha.metasync import (
    CONTROLLER_SYNC_INTERVAL_MS,
    SYNC_INTERVAL_MS,
    MetadataSync,
    register_delay_offset,
)
from orbitmq.broker.ha.writes import ReplicatedWrites
from orbitmq.broker.handlers.admin import AdminHandlers
from orbitmq.broker.handlers.client import ClientHandlers, GroupNotifier
from orbitmq.broker.handlers.fields import HandlerFn
from orbitmq.broker.handlers.groups import GroupHandlers
from orbitmq.broker.handlers.maintenance import MaintenanceHandlers
from orbitmq.broker.handlers.offsets import OffsetHandlers
from orbitmq.broker.handlers.pop import PopHandlers
from orbitmq.broker.handlers.pull import PullHandler
from orbitmq.broker.handlers.query import QueryHandlers
from orbitmq.broker.handlers.reply import ReplyHandlers
from orbitmq.broker.handlers.send import SendGate, SendHandlers
from orbitmq.broker.handlers.sendback import SendBackHandler
from orbitmq.broker.handlers.timers import TimerHandlers
from orbitmq.broker.handlers.transaction import TransactionHandlers
from orbitmq.broker.locks import QueueLocks
from orbitmq.broker.longpoll import PullWaiters
from orbitmq.broker.metadata import GROUPS, OFFSETS, TOPICS, MetadataFiles
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.pop.service import PopService
from orbitmq.broker.producers import ProducerRegistry
from orbitmq.broker.registration import Registrar
from orbitmq.broker.replica import BrokerReplica
from orbitmq.broker.schedule import ScheduleService
from orbitmq.broker.sqlfilter import ConsumerFilterTable
from orbitmq.broker.stats import BrokerStats
from orbitmq.broker.subscriptions import SubscriptionGroupTable
from orbitmq.broker.timer.routing import DelayRouting
from orbitmq.broker.timer.service import TimerService
from orbitmq.broker.topics import TopicTable
from orbitmq.broker.transaction import TransactionService
from orbitmq.common.message import MessageExt
from orbitmq.common.record import decode_record
from orbitmq.errors import BrokerError, ConfigError, DiskFull, OrbitMQError, StoreError
from orbitmq.failover.controller import FailoverController
from orbitmq.failover.etcd import EtcdUnavailable
from orbitmq.remoting.budget import MemoryBudget
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.local import LocalDispatch
from orbitmq.remoting.signing import AclCredentials, make_remoting_client
from orbitmq.remoting.tls import ServerTls
from orbitmq.remoting.transport import RemotingClient, RemotingServer
from orbitmq.store.api import MessageStore, PutMessageResult, PutMessageStatus
from orbitmq.store.config import BrokerRole, StoreConfig

log = logging.getLogger("orbitmq.broker")

StoreFactory = Callable[[StoreConfig], MessageStore]


def default_store(config: StoreConfig, delay_levels_ms: tuple[int, ...] | None = None) -> MessageStore:
    """The file store; `delay_levels_ms` lets crash recovery rebuild the schedule topic's tag slots."""
    from orbitmq.store.store import DefaultMessageStore

    if delay_levels_ms is None:
        return DefaultMessageStore(config)
    return DefaultMessageStore(config, delay_levels_ms=delay_levels_ms)


class _StoredMessages:
    """What the ACL checks read from the broker (acl/validator.StoredMessages)."""

    def __init__(self, store: MessageStore, consumers: ConsumerRegistry) -> None:
        self.store = store
        self.consumers = consumers

    def message_at(self, commit_log_offset: int) -> MessageExt | None:
        found = self.store.select_one_message_by_offset(commit_log_offset)
        if found is None:
            return None
        with found:
            try:  # no body: a compressed one must not hide the topic
                return decode_record(found.buffer, with_body=False, decompress=False)
            except OrbitMQError:
                return None

    def subscribes(self, group: str, topic: str) -> bool:
        return self.consumers.subscription(group, topic) is not None


class _TrackingRegistry:
    """Registers handlers on the server wrapped so the broker can refuse new work and
    wait for in-flight requests when it shuts down, and (aclEnable) so that every
    request passes the ACL check before its handler runs. A handler failing because
    the disk is full is answered 14 SERVICE_NOT_AVAILABLE "disk full" from the first
    failure on, logged once per change of state (diskstate.py); every other error
    becomes an answer in the connection (remoting/connection.py). Handlers are also served
    on the VIP channel (`fast`), all but PULL_MESSAGE, as RocketMQ does."""

    def __init__(
        self,
        server: RemotingServer,
        fast: RemotingServer | None = None,
        acl: AclValidator | None = None,
        store_health: WriteHealth | None = None,
        stats: BrokerStats | None = None,
    ) -> None:
        self.server = server
        #: Request latency per (request code, response code), for rocketmq_rpc_latency.
        self.stats = stats
        self.fast = fast
        self.acl = acl
        #: A handler whose store write fails for lack of space answers 14 "disk full", logged once.
        self.store_health = store_health or WriteHealth("message store")
        self.closing = False
        self.in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def register(self, code: int, handler: HandlerFn) -> None:
        async def tracked(request: RemotingCommand, peer: Peer) -> RemotingCommand | None:
            if self.closing:
                if request.is_oneway:
                    return None
                return request.response(ResponseCode.SERVICE_NOT_AVAILABLE, "the broker is shutting down")
            grant = None
            if self.acl is not None:
                try:
                    grant = self.acl.check(request, peer.host)
                except AclError as exc:  # the refusal's code (SYSTEM_ERROR as 4.x, or NO_PERMISSION) and text
                    return None if request.is_oneway else request.response(exc.code, str(exc))
            self.in_flight += 1
            self._idle.clear()
            started = time.perf_counter()
            response_code = -1
            try:
                response = await handler(request, peer)
                if grant is not None and response is not None:
                    assert self.acl is not None
                    response = self.acl.screen(request, response, grant)
                if response is not None:
                    response_code = response.code
                return response
            except (StoreError, OSError) as exc:
                if not is_disk_full(exc):
                    response_code = ResponseCode.SYSTEM_ERROR
                    raise  # a defect: answered and logged by the connection's error boundary
                self.store_health.failed(exc)
                response_code = ResponseCode.SERVICE_NOT_AVAILABLE
                raise DiskFull(DISK_FULL_REMARK) from None
            except BrokerError as exc:
                response_code = exc.code
                raise
            except Exception:
                response_code = ResponseCode.SYSTEM_ERROR
                raise
            finally:
                self.in_flight -= 1
                if self.in_flight == 0:
                    self._idle.set()
                if self.stats is not None:
                    self.stats.record_rpc(request.code, response_code, (time.perf_counter() - started) * 1000)

        self.server.register(code, tracked)
        if self.fast is not None and code != RequestCode.PULL_MESSAGE:
            self.fast.register(code, tracked)

    def on_disconnect(self, callback: Callable[[Peer], None]) -> None:
        self.server.on_disconnect(callback)
        if self.fast is not None:
            self.fast.on_disconnect(callback)

    async def drain(self, timeout: float) -> bool:
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
            return True
        except TimeoutError:
            return False


class Broker:
    """One RocketMQ-compatible broker. See the module docstring for start and shutdown order."""

    def __init__(
        self,
        config: BrokerConfig,
        *,
        store_factory: StoreFactory = default_store,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.live = LiveConfig(config)
        self._store_factory = store_factory
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.store: MessageStore | None = None
        self.topics = TopicTable(self.clock_ms)
        self.groups = SubscriptionGroupTable(config.auto_create_subscription_group, self.clock_ms)
        self.offsets = ConsumerOffsetTable()
        self.consumers = ConsumerRegistry(config.channel_expired_timeout_mills)
        self.producers = ProducerRegistry(config.channel_expired_timeout_mills)
        self.locks = QueueLocks(config.rebalance_lock_max_live_time)
        self.waiters = PullWaiters()
        #: Bounds the puts in flight; sends that wait here too long answer SYSTEM_BUSY.
        self.send_gate = SendGate()
        #: Whether store writes fail (full disk): one log line per change of state.
        self.store_health = WriteHealth("message store")
        self.stats = BrokerStats(self.clock_ms)
        self.metadata = MetadataFiles(
            config.store.config_dir, topics=self.topics, groups=self.groups, offsets=self.offsets
        )
        self.server: RemotingServer | None = None
        #: The VIP channel (listenPort - 2 by default; see BrokerConfig.fast_port).
        self.fast_server: RemotingServer | None = None
        #: The plain ACL check, when aclEnable=true (broker/acl/).
        self.acl: AclValidator | None = None
        self._registry: _TrackingRegistry | None = None
        self._client: RemotingClient | None = None
        self._client_ssl: ssl.SSLContext | None = None
        self.registrar: Registrar | None = None
        self._notifier = GroupNotifier(
            self.consumers, self.groups, lambda: self.live.value.notify_consumer_ids_changed_enable
        )
        self._client_handlers: ClientHandlers | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.address: tuple[str, int] | None = None
        #: Delay-level and timed-message delivery (broker/schedule.py, broker/timer/).
        self.schedule: ScheduleService | None = None
        self.timers: TimerService | None = None
        #: Compiled SQL92 subscriptions, shared by heartbeats and pulls (broker/sqlfilter.py).
        self.filters = ConsumerFilterTable(lambda: self.live.value.enable_property_filter)
        #: Half messages, END_TRANSACTION and transaction checks (broker/transaction/).
        self.transactions: TransactionService | None = None
        #: RocketMQ 5 POP consumption (broker/pop/), made with the handlers.
        self.pop: PopService | None = None
        #: The duplicate window of idempotent sends (broker/dedup.py), made when the handlers are.
        self.dedup: SendDeduplicator | None = None
        #: Master/slave replication for the store's brokerRole (broker/ha/).
        self.replication: Replication | None = None
        #: enableControllerMode: the failover controller (orbitmq/failover) and its role switch.
        self.failover: FailoverController | None = None
        self.replica: BrokerReplica | None = None
        self._server_tls: ServerTls | None = None
        self._local: LocalDispatch | None = None

    @property
    def config(self) -> BrokerConfig:
        return self.live.value

    @property
    def broker_addr(self) -> str:
        return self.live.value.broker_addr

    def local_dispatch(self) -> LocalDispatch:
        """Its handlers for callers in this process (the in-broker gRPC front: local mode), served
        as requests read from its remoting port are (ACL, shutdown refusals, error answers)."""
        if self.server is None:
            raise RuntimeError("the broker is not started")
        if self._local is None:
            self._local = LocalDispatch(self.server, lambda: self.broker_addr)
        return self._local

    # --- change hooks -------------------------------------------------------------

    def _topics_changed(self) -> None:
        self.metadata.mark(TOPICS)
        if self.registrar is not None:
            self.registrar.topics_changed()

    async def _register_topics_now(self) -> None:
        """A topic change the NameServers learn before the request that made it is answered."""
        self.metadata.mark(TOPICS)
        if self.registrar is not None:
            await self.registrar.register_all()

    def _groups_changed(self) -> None:
        self.metadata.mark(GROUPS)

    def _offsets_changed(self) -> None:
        self.metadata.mark(OFFSETS)
        self.offsets.mark_clean()

    def _config_changed(self) -> None:
        self.groups.auto_create = self.live.value.auto_create_subscription_group
        if not self.live.value.auto_create_topic_enable and self.topics.disable_auto_create():
            self._topics_changed()

    # --- lifecycle --------------------------------------------------------------------

    async def start(self) -> tuple[str, int]:
        """Open the store, load metadata, listen and register. Returns the bound (host, port)."""
        config = self.live.value
        os.makedirs(config.store.config_dir, exist_ok=True)
        if config.enable_controller_mode:
            # The replica starts as a slave under the id etcd gave it; the controller promotes it.
            self.replica = BrokerReplica(self)
            self.failover = FailoverController(config, self.replica)
            try:
                broker_id = await self.failover.prepare()
            except EtcdUnavailable as exc:
                await self.failover.close()
                self.failover = None
                raise ConfigError(f"enableControllerMode=true but etcd did not answer: {exc}") from None
            self.live.value = config = self.replica.slave_config(config, broker_id, "")
        if self._store_factory is default_store:
            store = default_store(config.store, config.delay_levels_ms)
        else:
            store = self._store_factory(config.store)
        await store.start()
        self.store = store
        try:
            return await self._start_serving(store)
        except BaseException:
            await self._close_after_failed_start()
            raise

    async def _start_serving(self, store: MessageStore) -> tuple[str, int]:
        config = self.live.value
        self.metadata.load()
        before = self.topics.data_version
        self.topics.create_system_topics(
            cluster_name=config.broker_cluster_name,
            broker_name=config.broker_name,
            auto_create_topic_enable=config.auto_create_topic_enable,
            default_topic_queue_nums=config.default_topic_queue_nums,
            cluster_topic_enable=config.cluster_topic_enable,
            broker_topic_enable=config.broker_topic_enable,
            trace_topic_name=config.msg_trace_topic_name if config.trace_topic_enable else None,
        )
        if self.topics.data_version != before:
            self.metadata.mark(TOPICS)
        store.add_dispatch_listener(self.waiters.notify)
        # Built once for every port and connection (tls.*); raises ConfigError on unreadable files.
        server_tls = self._server_tls = config.tls.server_tls()
        self._client_ssl = config.tls.client_context()
        self.replication = self._create_replication(store, server_tls)
        # What the broker writes on its own waits for replicas as client sends do (ha/writes.py).
        self._internal_store = ReplicatedWrites(store, lambda: self.replication).as_store()
        self._create_delay_services(self._internal_store)

        if config.acl_enable:
            self.acl = AclValidator(config.acl_file, clock_ms=self.clock_ms)
            self.acl.stored = _StoredMessages(store, self.consumers)
            try:
                self.acl.load()
            except AclError as exc:
                raise ConfigError(f"aclEnable=true but {exc}") from None
        budget = MemoryBudget(config.remoting_memory_budget)  # one for both listeners
        server = RemotingServer(config.listen_host, config.listen_port, tls=server_tls, memory_budget=budget,
                                backlog=config.server_socket_backlog)
        self.server = server
        fast_port = config.fast_port
        if fast_port is not None:
            self.fast_server = RemotingServer(config.listen_host, fast_port, tls=server_tls, memory_budget=budget,
                                              backlog=config.server_socket_backlog)
        registry = _TrackingRegistry(server, self.fast_server, self.acl, self.store_health, self.stats)
        self._registry = registry
        self._wire_handlers(registry, store)
        if config.store.broker_role is not BrokerRole.SLAVE and self.pop is not None:
            await self.pop.start()  # replays the revive topic before the first request
        host, port = await server.start()
        if self.fast_server is not None:
            fast_host, bound_fast = await self.fast_server.start()
            log.info("VIP channel of broker %s serves on %s:%d", config.broker_name, fast_host, bound_fast)
        if port != config.listen_port:
            # Port 0: advertise the port the system chose.
            self.live.value = dataclasses.replace(self.live.value, listen_port=port)
        self.address = (host, port)
        assert self.schedule is not None and self.timers is not None
        if config.store.broker_role is not BrokerRole.SLAVE:  # a slave stores nothing itself
            await self.schedule.start()
            await self.timers.start()

        self._client = make_remoting_client(self._own_credentials(), ssl_context=self._client_ssl)
        replication = self.replication
        assert replication is not None
        await replication.start(config.listen_host, self.live.value.advertised_ip)
        self.registrar = Registrar(
            live=self.live, topics=self.topics, client=self._client, broker_addr=lambda: self.broker_addr,
            ha_server_addr=self._ha_server_addr, on_registered=self._on_registered,
        )
        await self.registrar.start()
        if self.failover is not None:
            self.failover.run()
        self._tasks = [
            asyncio.ensure_future(self._every(config.flush_consumer_offset_interval, self._persist_offsets)),
            asyncio.ensure_future(self._every(config.channel_scan_interval_mills, self._scan_channels)),
            asyncio.ensure_future(self._every(10_000, self.stats.sample)),
        ]
        if self.acl is not None:
            self._tasks.append(asyncio.ensure_future(self.acl.watch()))
        log.info("broker %s serving on %s:%d as %s", config.broker_name, host, port, self.broker_addr)
        return host, port

    def _ha_server_addr(self) -> str:
        replication = self.replication
        if replication is None:
            return self.live.value.ha_server_addr
        return replication.ha_server_addr(self.live.value)

    def _on_registered(self, master_addr: str, master_ha_addr: str) -> None:
        if self.replication is not None and self.failover is None:  # in controller mode etcd names the master
            self.replication.on_registered(master_addr, master_ha_addr)

    async def _replica_wait(self, end_offset: int) -> PutMessageStatus:
        """Controller mode: the replication of the moment decides (the role changes at run time)."""
        replication = self.replication
        if replication is None:
            return PutMessageStatus.PUT_OK
        if not replication.waits_for_replicas:
            return PutMessageStatus.PUT_OK
        return await replication.wait_for_slave(end_offset)

    def _put_refusal(self) -> PutMessageResult | None:
        """Controller mode: minInSyncReplicas before the append, by the replication of the moment."""
        replication = self.replication
        return replication.put_refusal() if replication is not None else None

    def _wire_handlers(self, registry: _TrackingRegistry, store: MessageStore) -> None:
        config = self.live.value
        # Idempotent sends: the duplicate window, rebuilt from the CommitLog tail it covers.
        self.dedup = SendDeduplicator(self.live, self.topics, self.clock_ms)
        self.dedup.rebuild(store)
        SendHandlers(
            dedup=self.dedup, live=self.live, topics=self.topics, groups=self.groups, store=store,
            topics_changed=self._topics_changed, groups_changed=self._groups_changed, stats=self.stats,
            gate=self.send_gate, before_put=self._delay_routing(), store_health=self.store_health,
            replica_wait=(
                self._replica_wait if self.failover is not None
                else self.replication.wait_for_slave if self.replication and self.replication.waits_for_replicas
                else None
            ),
            may_write=self.failover.may_write if self.failover is not None else None,
            put_refusal=self._put_refusal if self.failover is not None else None,
        ).register(registry)
        register_delay_offset(registry, lambda: self.schedule)
        assert self.schedule is not None
        SendBackHandler(
            live=self.live, topics=self.topics, groups=self.groups, store=self._internal_store,
            route_delayed=self._delay_routing(),
            topics_changed=self._topics_changed, groups_changed=self._groups_changed, stats=self.stats,
        ).register(registry)
        PullHandler(
            live=self.live, topics=self.topics, groups=self.groups, consumers=self.consumers,
            offsets=self.offsets, store=store, waiters=self.waiters, groups_changed=self._groups_changed,
            stats=self.stats, filters=self.filters, clock_ms=self.clock_ms, topics_changed=self._topics_changed,
        ).register(registry)
        OffsetHandlers(offsets=self.offsets, store=store, topics=self.topics).register(registry)
        QueryHandlers(live=self.live, store=store).register(registry)
        self._client_handlers = ClientHandlers(
            broker_name=config.broker_name, topics=self.topics, groups=self.groups, consumers=self.consumers,
            producers=self.producers, locks=self.locks, notifier=self._notifier, clock_ms=self.clock_ms,
            topics_changed=self._topics_changed, groups_changed=self._groups_changed, filters=self.filters,
            store=store,
        )
        self._client_handlers.register(registry)
        AdminHandlers(
            live=self.live, topics=self.topics, offsets=self.offsets, store=store, stats=self.stats,
            topics_changed=self._topics_changed, config_changed=self._config_changed,
            topics_registered=self._register_topics_now,
        ).register(registry)
        MaintenanceHandlers(
            store=store, topics=self.topics, offsets=self.offsets, consumers=self.consumers,
        ).register(registry)
        GroupHandlers(
            live=self.live, topics=self.topics, groups=self.groups, consumers=self.consumers,
            offsets=self.offsets, store=store, stats=self.stats, groups_changed=self._groups_changed,
            offsets_changed=self._offsets_changed,
        ).register(registry)
        self.transactions = TransactionService(
            live=self.live, store=self._internal_store, offsets=self.offsets, producers=self.producers, topics=self.topics,
            topics_changed=self._topics_changed, clock_ms=self.clock_ms,
        )
        self.transactions.start()  # progress loaded before the first END_TRANSACTION can arrive
        TransactionHandlers(live=self.live, service=self.transactions).register(registry)
        ReplyHandlers(
            live=self.live, topics=self.topics, producers=self.producers, store=store, clock_ms=self.clock_ms,
        ).register(registry)
        AclHandlers(self.acl, self._identity).register(registry)
        TimerHandlers(live=self.live, topics=self.topics, timers=lambda: self.timers).register(registry)
        self.pop = PopService(
            live=self.live, topics=self.topics, groups=self.groups, offsets=self.offsets, store=store,
            filters=self.filters, clock_ms=self.clock_ms, topics_changed=self._topics_changed,
            groups_changed=self._groups_changed, stats=self.stats,
        )
        PopHandlers(self.pop).register(registry)

    def _own_credentials(self) -> AclCredentials | None:
        """The broker's own account (brokerAccessKey/brokerSecretKey), for what it sends."""
        config = self.live.value
        if not config.broker_access_key:
            return None
        # Version 2: a captured REGISTER_BROKER cannot be replayed to redirect a route later.
        return AclCredentials(config.broker_access_key, config.broker_secret_key, signature_version=2)

    def _identity(self) -> tuple[str, str, str]:
        config = self.live.value
        return config.broker_cluster_name, config.broker_name, self.broker_addr

    def _create_delay_services(self, store: MessageStore) -> None:
        config = self.live.value
        self.schedule = ScheduleService(
            store, config.delay_levels_ms, config.store.config_dir, lambda: self.broker_addr,
            flush_interval_ms=config.flush_delay_offset_interval, clock_ms=self.clock_ms,
        )
        self.timers = TimerService(
            store, config.store.config_dir, lambda: self.broker_addr,
            max_delay_ms=config.timer_max_delay_sec * 1000, flush_interval_ms=config.timer_flush_interval_ms,
            roll_after_ms=config.store.file_reserved_time * 3_600_000 // 2, clock_ms=self.clock_ms,
        )
        store.add_dispatch_listener(self.schedule.notify)
        store.add_dispatch_listener(self.timers.notify)

    def _create_replication(self, store: MessageStore, server_tls: ServerTls | None) -> Replication:
        config = self.live.value
        metadata = None
        if config.store.broker_role is BrokerRole.SLAVE:
            controller_mode = bool(getattr(config, "enable_controller_mode", False))
            metadata = MetadataSync(
                topics=self.topics, groups=self.groups, offsets=self.offsets, config_dir=config.store.config_dir,
                topics_changed=self._topics_changed, groups_changed=self._groups_changed,
                offsets_changed=self._offsets_changed, credentials=self._own_credentials(),
                ssl_context=self._client_ssl,
                interval_ms=CONTROLLER_SYNC_INTERVAL_MS if controller_mode else SYNC_INTERVAL_MS,
            )
            if controller_mode:
                # A record of a topic this slave does not know: the master made the topic since the
                # last round; copy its config now, not a round later (it may become master meanwhile).
                store.add_dispatch_listener(self._unknown_topic_syncs(metadata))
        return Replication(
            config, store, metadata=metadata, server_tls=server_tls, client_ssl=self._client_ssl,
            # enableControllerMode (orbitmq/failover): the epoch-aware HA stream (docs/failover-store.md).
            controller_mode=bool(getattr(config, "enable_controller_mode", False)),
        )

    def _unknown_topic_syncs(self, metadata: MetadataSync) -> Callable[[str, int, int], None]:
        """A dispatch listener asking for a metadata round once per topic missing from the table
        (a topic the master's table lacks too, such as an internal one, asks only once)."""
        topics = self.topics
        asked: set[str] = set()

        def notify(topic: str, queue_id: int, max_offset: int) -> None:
            if topic in topics or topic in asked or not metadata.master_addr:
                return
            if len(asked) >= 4096:
                asked.clear()
            asked.add(topic)
            metadata.sync_soon()

        return notify

    def _delay_routing(self) -> DelayRouting:
        assert self.schedule is not None and self.timers is not None
        return DelayRouting(self.schedule, self.timers)

    @staticmethod
    async def _every(period_ms: int, action: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(period_ms / 1000)
            try:
                action()
            except Exception:  # a failing housekeeping round must not stop the next ones
                log.exception("periodic task %s failed", getattr(action, "__name__", action))

    def _persist_offsets(self) -> None:
        if self.offsets.dirty:
            self._offsets_changed()

    def _scan_channels(self) -> None:
        if self._client_handlers is not None:
            self._client_handlers.scan_expired()

    async def close(self) -> None:
        """Shut down in the documented order; safe to call twice."""
        registry, self._registry = self._registry, None
        if registry is None and self.store is None:
            return
        if registry is not None:
            registry.closing = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self.failover is not None:  # a master's lease is revoked: another replica takes over at once
            await self.failover.close()
        if self.registrar is not None:
            await self.registrar.close(unregister=True)
            self.registrar = None
        self.waiters.wake_all()
        if self.pop is not None:
            self.pop.waiters.wake_all()
        if registry is not None and not await registry.drain(self.live.value.shutdown_drain_seconds):
            log.warning("%d requests still running at shutdown", registry.in_flight)
        await self._close_after_failed_start()

    async def _close_after_failed_start(self) -> None:
        if self.failover is not None:
            await self.failover.close()
            self.failover = None
        await self._notifier.close()
        if self._local is not None:  # handlers still running for in-process callers end as with their connections
            self._local.close()
            self._local = None
        if self.server is not None:
            await self.server.close()
            self.server = None
        if self.fast_server is not None:
            await self.fast_server.close()
            self.fast_server = None
        if self._client is not None:
            await self._client.close()
            self._client = None
        if self.registrar is not None:
            await self.registrar.close(unregister=False)
            self.registrar = None
        if self.replication is not None:
            await self.replication.close()
            self.replication = None
        for service in (self.pop, self.timers, self.schedule, self.transactions):
            if service is not None:
                await service.close()
        self.transactions = self.pop = None
        self.timers = self.schedule = None
        if self.store is not None:
            try:
                await self.metadata.close()
            finally:
                store, self.store = self.store, None
                await store.close()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
