"""NameServer request handlers: one async function per request code (RocketMQ's DefaultRequestProcessor).

Each handler reads its header fields, calls the route table or the KV table,
and answers with RocketMQ's response codes and remarks. A missing or
malformed header field, or a malformed body, raises a ValueError subclass
(`HeaderError`, `BodyError`, `ConfigError`), which the transport answers
with SYSTEM_ERROR and the error text as remark, as the Java server does.

Codes without a handler are answered REQUEST_CODE_NOT_SUPPORTED by the
transport. A 4.9.x Java name server stays silent instead and lets the client
time out; an explicit answer is kinder and no client depends on the silence.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Awaitable, Callable

from orbitmq.common.javaprops import parse_properties
from orbitmq.errors import ConfigError, SystemError_
from orbitmq.namesrv import bodies
from orbitmq.namesrv.config import NamesrvConfig, format_properties
from orbitmq.namesrv.kvconfig import ORDER_TOPIC_CONFIG, KVConfig
from orbitmq.namesrv.routes import BrokerRegistration, DataVersion, RouteTable, TopicConfig, TopicRouteData
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.header_base import parse_long
from orbitmq.remoting.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from orbitmq.remoting.transport import Peer, RemotingServer
from orbitmq.store.config_file import write_atomically

log = logging.getLogger("orbitmq.namesrv")

#: Request versions from V3_0_11 on send RegisterBrokerBody; older ones a bare TopicConfigSerializeWrapper.
VERSION_REGISTER_WITH_FILTER_SERVER = 37
#: From V4_9_4 on, clients get the standard-JSON route form.
VERSION_STANDARD_ROUTE_JSON = 401


def _heartbeat_timeout(request: RemotingCommand) -> int | None:
    """`heartbeatTimeoutMillis`, which 5.x brokers add to REGISTER_BROKER; None when absent."""
    raw = request.field("heartbeatTimeoutMillis")
    if not raw:
        return None
    value = parse_long(raw, "heartbeatTimeoutMillis")  # a Long in 5.x's RegisterBrokerRequestHeader
    return value if value > 0 else None


HandlerFn = Callable[[RemotingCommand, Peer], Awaitable[RemotingCommand | None]]
#: Returns the refusal to answer with, or None to let the handler run.
RequestGate = Callable[[RemotingCommand, Peer], RemotingCommand | None]


def _gated(gate: RequestGate, handler: HandlerFn) -> HandlerFn:
    async def checked(request: RemotingCommand, peer: Peer) -> RemotingCommand | None:
        refused = gate(request, peer)
        if refused is not None:
            return None if request.is_oneway else refused
        return await handler(request, peer)

    return checked


def _masked_crc32(data: bytes) -> int:
    """CRC-32 with the sign bit cleared, as RocketMQ's UtilAll.crc32 (§5.12)."""
    return zlib.crc32(data) & 0x7FFFFFFF


class NamesrvHandlers:
    """The NameServer's request handlers over its two tables.

    `routes` and `kv` are owned by the event loop that runs the handlers.
    `persist_kv` durably writes the KV table after a change; `get_config` and
    `set_config` read and replace the live configuration.
    """

    def __init__(
        self,
        routes: RouteTable,
        kv: KVConfig,
        persist_kv: Callable[[], Awaitable[None]],
        get_config: Callable[[], NamesrvConfig],
        set_config: Callable[[NamesrvConfig], None],
    ) -> None:
        self.routes = routes
        self.kv = kv
        self._persist_kv = persist_kv
        self._get_config = get_config
        self._set_config = set_config
        #: One UPDATE_NAMESRV_CONFIG at a time, so the file ends with the last one's state.
        self._config_lock = asyncio.Lock()

    def register_on(self, server: RemotingServer, gate: RequestGate | None = None) -> None:
        """Register every NameServer request code on `server`; `gate` (ACL) sees each request first
        and answers the ones it refuses."""
        table: dict[RequestCode, HandlerFn] = {
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_topic_list,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_namesrv_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_namesrv_config,
        }
        for code, handler in table.items():
            server.register(code, handler if gate is None else _gated(gate, handler))

    # --- brokers ----------------------------------------------------------------

    async def register_broker(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        h = RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        body = request.body_bytes()
        if h.body_crc32 != 0 and _masked_crc32(body) != h.body_crc32:
            log.warning("register from %s (%s) failed the body CRC check", h.broker_addr, peer.addr)
            return request.response(ResponseCode.SYSTEM_ERROR, "crc32 not match")

        version: DataVersion
        topics: dict[str, TopicConfig]
        filters: list[str]
        if not body:
            # RocketMQ registers a body-less broker with a zero DataVersion and no topics.
            version, topics, filters = DataVersion(), {}, []
        elif request.version >= VERSION_REGISTER_WITH_FILTER_SERVER:
            version, topics, filters = bodies.decode_register_body(body, compressed=h.compressed)
        else:
            version, topics = bodies.decode_topic_config_wrapper(bodies.parse_json(body, "register body"))
            filters = []
        registration = BrokerRegistration(
            cluster_name=h.cluster_name,
            broker_addr=h.broker_addr,
            broker_name=h.broker_name,
            broker_id=h.broker_id,
            ha_server_addr=h.ha_server_addr,
            data_version=version,
            topic_configs=topics,
            filter_server_list=tuple(filters),
            connection_id=peer.id,
            timeout_ms=_heartbeat_timeout(request),
        )
        is_new = self.routes.live_info(h.broker_addr) is None
        result = self.routes.register_broker(registration)
        if result.newer_master is not None:
            holder, epoch = result.newer_master
            remark = (
                f"stale master registration of {h.broker_name} {h.broker_addr} with stateVersion "
                f"{version.state_version} refused: {holder} is master with stateVersion {epoch}"
            )
            log.warning("%s (from %s)", remark, peer.addr)
            return request.response(ResponseCode.SYSTEM_ERROR, remark)
        if is_new:
            log.info("broker registered: %s %s id=%d cluster=%s topics=%d (from %s)",
                     h.broker_name, h.broker_addr, h.broker_id, h.cluster_name, len(topics), peer.addr)
        ext = RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        ).to_ext_fields()
        order_conf = self.kv.namespace(ORDER_TOPIC_CONFIG)
        return request.response(
            ext_fields=ext or None, body=bodies.encode_kv_table(order_conf) if order_conf else None
        )

    async def unregister_broker(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        h = UnRegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        self.routes.unregister_broker(h.cluster_name, h.broker_addr, h.broker_name, h.broker_id)
        log.info("broker unregistered: %s %s id=%d", h.broker_name, h.broker_addr, h.broker_id)
        return request.response()

    async def query_data_version(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        broker_addr = QueryDataVersionRequestHeader.from_ext_fields(request.ext_fields).broker_addr
        version = bodies.decode_data_version(request.body_bytes() or b"{}")
        changed = self.routes.is_data_version_changed(broker_addr, version)
        if not changed:
            # An unchanged broker that asks counts as a heartbeat.
            self.routes.touch(broker_addr)
        ours = self.routes.data_version_of(broker_addr)
        return request.response(
            ext_fields=QueryDataVersionResponseHeader(changed=changed).to_ext_fields(),
            body=bodies.encode_data_version(ours) if ours is not None else None,
        )

    # --- routes and topic lists ------------------------------------------------

    async def get_route_info(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        h = GetRouteInfoRequestHeader.from_ext_fields(request.ext_fields)
        topic = h.topic
        route = self.routes.pick_route(topic)
        if route is None:
            return request.response(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}"
            )
        if self._get_config().order_message_enable:
            conf = self.kv.get(ORDER_TOPIC_CONFIG, topic)
            if conf is not None:
                route = TopicRouteData(route.queue_datas, route.broker_datas, conf)
        standard = request.version >= VERSION_STANDARD_ROUTE_JSON or bool(h.accept_standard_json_only)
        return request.response(body=bodies.encode_route(route, standard=standard))

    async def get_broker_cluster_info(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=bodies.encode_cluster_info(self.routes.cluster_info()))

    async def get_all_topic_list(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=bodies.encode_topic_list(self.routes.all_topics()))

    async def get_topics_by_cluster(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        cluster = GetTopicsByClusterRequestHeader.from_ext_fields(request.ext_fields).cluster
        return request.response(body=bodies.encode_topic_list(self.routes.topics_by_cluster(cluster)))

    async def get_system_topic_list(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topics, broker_addr = self.routes.system_topics()
        return request.response(body=bodies.encode_topic_list(topics, broker_addr))

    async def get_unit_topic_list(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=bodies.encode_topic_list(self.routes.unit_topics()))

    async def get_has_unit_sub_topic_list(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=bodies.encode_topic_list(self.routes.has_unit_sub_topics()))

    async def get_has_unit_sub_ununit_topic_list(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=bodies.encode_topic_list(self.routes.has_unit_sub_ununit_topics()))

    # --- administration ----------------------------------------------------------

    async def wipe_write_perm_of_broker(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        broker_name = WipeWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields).broker_name
        count = self.routes.wipe_write_perm(broker_name)
        log.info("write permission of %s wiped on %d topics (asked by %s)", broker_name, count, peer.addr)
        return request.response(ext_fields=WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count).to_ext_fields())

    async def add_write_perm_of_broker(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        broker_name = AddWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields).broker_name
        count = self.routes.add_write_perm(broker_name)
        log.info("write permission of %s added on %d topics (asked by %s)", broker_name, count, peer.addr)
        return request.response(ext_fields=AddWritePermOfBrokerResponseHeader(add_topic_count=count).to_ext_fields())

    async def delete_topic_in_namesrv(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        h = DeleteTopicFromNamesrvRequestHeader.from_ext_fields(request.ext_fields)
        self.routes.delete_topic(h.topic, h.cluster_name or None)
        return request.response()

    # --- KV config ------------------------------------------------------------------

    async def put_kv_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        h = PutKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        old = self.kv.get(h.namespace, h.key)
        if self.kv.put(h.namespace, h.key, h.value):
            await self._persist_or_restore(h.namespace, h.key, old)
        return request.response()

    async def get_kv_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        h = GetKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        value = self.kv.get(h.namespace, h.key)
        if value is None:
            return request.response(
                ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {h.namespace} Key: {h.key}"
            )
        return request.response(ext_fields=GetKVConfigResponseHeader(value=value).to_ext_fields())

    async def delete_kv_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        h = DeleteKVConfigRequestHeader.from_ext_fields(request.ext_fields)
        old = self.kv.get(h.namespace, h.key)
        if self.kv.delete(h.namespace, h.key):
            await self._persist_or_restore(h.namespace, h.key, old)
        return request.response()

    async def _persist_or_restore(self, namespace: str, key: str, old: str | None) -> None:
        """Write the KV file; if that fails, undo the change so the error answer is true."""
        try:
            await self._persist_kv()
        except OSError as exc:
            if old is None:
                self.kv.delete(namespace, key)
            else:
                self.kv.put(namespace, key, old)
            log.error("cannot write the KV config file, change undone: %s", exc)
            raise

    async def get_kv_list_by_namespace(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        namespace = GetKVListByNamespaceRequestHeader.from_ext_fields(request.ext_fields).namespace
        table = self.kv.namespace(namespace)
        if table is None:
            return request.response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {namespace}")
        return request.response(body=bodies.encode_kv_table(table))

    # --- NameServer config -----------------------------------------------------------

    async def update_namesrv_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        body = request.body_bytes()
        if not body:
            return request.response()
        try:
            props = parse_properties(body.decode("utf-8"))
        except UnicodeDecodeError:
            raise ConfigError("namesrv config body is not UTF-8 text") from None
        async with self._config_lock:
            config = self._get_config().updated(props)
            self._set_config(config)
            log.info("namesrv config updated by %s: %s", peer.addr, ", ".join(f"{k}={v}" for k, v in props.items()))
            path = config.persist_path
            if path:
                # RocketMQ's Configuration.persist: the whole configuration replaces the file.
                text = format_properties(config.file_properties())
                try:
                    await asyncio.to_thread(write_atomically, path, text)
                except OSError as exc:
                    raise SystemError_(
                        f"the new config is in effect but could not be written to {path}: {exc.strerror or exc}"
                    ) from None
        return request.response()

    async def get_namesrv_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=format_properties(self._get_config().to_properties()).encode())
