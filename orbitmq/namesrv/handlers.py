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

import logging
import zlib
from collections.abc import Awaitable, Callable

from orbitmq.errors import ConfigError, HeaderError
from orbitmq.namesrv import bodies
from orbitmq.namesrv.config import NamesrvConfig, format_properties, parse_properties
from orbitmq.namesrv.kvconfig import ORDER_TOPIC_CONFIG, KVConfig
from orbitmq.namesrv.routes import BrokerRegistration, DataVersion, RouteTable, TopicConfig, TopicRouteData
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import Peer, RemotingServer

log = logging.getLogger("orbitmq.namesrv")

#: Request versions from V3_0_11 on send RegisterBrokerBody; older ones a bare TopicConfigSerializeWrapper.
VERSION_REGISTER_WITH_FILTER_SERVER = 37
#: From V4_9_4 on, clients get the standard-JSON route form.
VERSION_STANDARD_ROUTE_JSON = 401


# --- header fields (RocketMQ's names; local until remoting/headers.py has the namesrv headers) ---


def _required(request: RemotingCommand, name: str) -> str:
    value = request.field(name)
    if value is None:
        # The text Java's RemotingCommand.decodeCommandCustomHeader uses.
        raise HeaderError(f"the custom field <{name}> is null")
    return value


def _int(request: RemotingCommand, name: str, default: int | None = None) -> int:
    value = request.field(name)
    if value is None:
        if default is None:
            raise HeaderError(f"the custom field <{name}> is null")
        return default
    try:
        return int(value.strip())
    except ValueError:
        raise HeaderError(f"the custom field <{name}> is not a number: {value!r}") from None


def _bool(request: RemotingCommand, name: str) -> bool:
    # Java's Boolean.parseBoolean: "true" in any case, anything else is false.
    value = request.field(name)
    return value is not None and value.strip().lower() == "true"


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

    def register_on(self, server: RemotingServer) -> None:
        """Register every NameServer request code on `server`."""
        table: dict[RequestCode, Callable[[RemotingCommand, Peer], Awaitable[RemotingCommand | None]]] = {
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
            server.register(code, handler)

    # --- brokers ----------------------------------------------------------------

    async def register_broker(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        broker_name = _required(request, "brokerName")
        broker_addr = _required(request, "brokerAddr")
        cluster_name = _required(request, "clusterName")
        ha_server_addr = _required(request, "haServerAddr")
        broker_id = _int(request, "brokerId")
        body = request.body_bytes()
        body_crc = _int(request, "bodyCrc32", 0)
        if body_crc != 0 and _masked_crc32(body) != body_crc:
            log.warning("register from %s (%s) failed the body CRC check", broker_addr, peer.addr)
            return request.response(ResponseCode.SYSTEM_ERROR, "crc32 not match")

        version: DataVersion
        topics: dict[str, TopicConfig]
        filters: list[str]
        if not body:
            # RocketMQ registers a body-less broker with a zero DataVersion and no topics.
            version, topics, filters = DataVersion(), {}, []
        elif request.version >= VERSION_REGISTER_WITH_FILTER_SERVER:
            version, topics, filters = bodies.decode_register_body(body, compressed=_bool(request, "compressed"))
        else:
            version, topics = bodies.decode_topic_config_wrapper(bodies.parse_json(body, "register body"))
            filters = []
        timeout = request.field("heartbeatTimeoutMillis")  # sent by 5.x brokers
        registration = BrokerRegistration(
            cluster_name=cluster_name,
            broker_addr=broker_addr,
            broker_name=broker_name,
            broker_id=broker_id,
            ha_server_addr=ha_server_addr,
            data_version=version,
            topic_configs=topics,
            filter_server_list=tuple(filters),
            connection_id=peer.id,
            timeout_ms=_int(request, "heartbeatTimeoutMillis") if timeout else None,
        )
        is_new = self.routes.live_info(broker_addr) is None
        result = self.routes.register_broker(registration)
        if is_new:
            log.info("broker registered: %s %s id=%d cluster=%s topics=%d (from %s)",
                     broker_name, broker_addr, broker_id, cluster_name, len(topics), peer.addr)
        ext: dict[str, str] = {}
        if result.ha_server_addr is not None:
            ext["haServerAddr"] = result.ha_server_addr
        if result.master_addr is not None:
            ext["masterAddr"] = result.master_addr
        order_conf = self.kv.namespace(ORDER_TOPIC_CONFIG)
        return request.response(
            ext_fields=ext or None, body=bodies.encode_kv_table(order_conf) if order_conf else None
        )

    async def unregister_broker(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        cluster_name = _required(request, "clusterName")
        broker_addr = _required(request, "brokerAddr")
        broker_name = _required(request, "brokerName")
        broker_id = _int(request, "brokerId")
        self.routes.unregister_broker(cluster_name, broker_addr, broker_name, broker_id)
        log.info("broker unregistered: %s %s id=%d", broker_name, broker_addr, broker_id)
        return request.response()

    async def query_data_version(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        broker_addr = _required(request, "brokerAddr")
        version = bodies.decode_data_version(request.body_bytes() or b"{}")
        changed = self.routes.is_data_version_changed(broker_addr, version)
        if not changed:
            # An unchanged broker that asks counts as a heartbeat.
            self.routes.touch(broker_addr)
        ours = self.routes.data_version_of(broker_addr)
        return request.response(
            ext_fields={"changed": "true" if changed else "false"},
            body=bodies.encode_data_version(ours) if ours is not None else None,
        )

    # --- routes and topic lists ------------------------------------------------

    async def get_route_info(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = _required(request, "topic")
        route = self.routes.pick_route(topic)
        if route is None:
            return request.response(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}"
            )
        if self._get_config().order_message_enable:
            conf = self.kv.get(ORDER_TOPIC_CONFIG, topic)
            if conf is not None:
                route = TopicRouteData(route.queue_datas, route.broker_datas, conf)
        standard = request.version >= VERSION_STANDARD_ROUTE_JSON or _bool(request, "acceptStandardJsonOnly")
        return request.response(body=bodies.encode_route(route, standard=standard))

    async def get_broker_cluster_info(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=bodies.encode_cluster_info(self.routes.cluster_info()))

    async def get_all_topic_list(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=bodies.encode_topic_list(self.routes.all_topics()))

    async def get_topics_by_cluster(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        cluster = _required(request, "cluster")
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
        broker_name = _required(request, "brokerName")
        count = self.routes.wipe_write_perm(broker_name)
        log.info("write permission of %s wiped on %d topics (asked by %s)", broker_name, count, peer.addr)
        return request.response(ext_fields={"wipeTopicCount": str(count)})

    async def add_write_perm_of_broker(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        broker_name = _required(request, "brokerName")
        count = self.routes.add_write_perm(broker_name)
        log.info("write permission of %s added on %d topics (asked by %s)", broker_name, count, peer.addr)
        return request.response(ext_fields={"addTopicCount": str(count)})

    async def delete_topic_in_namesrv(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = _required(request, "topic")
        cluster = request.field("clusterName") or None
        self.routes.delete_topic(topic, cluster)
        return request.response()

    # --- KV config ------------------------------------------------------------------

    async def put_kv_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        namespace = _required(request, "namespace")
        key = _required(request, "key")
        value = _required(request, "value")
        if self.kv.put(namespace, key, value):
            await self._persist_kv()
        return request.response()

    async def get_kv_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        namespace = _required(request, "namespace")
        key = _required(request, "key")
        value = self.kv.get(namespace, key)
        if value is None:
            return request.response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {namespace} Key: {key}")
        return request.response(ext_fields={"value": value})

    async def delete_kv_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        namespace = _required(request, "namespace")
        key = _required(request, "key")
        if self.kv.delete(namespace, key):
            await self._persist_kv()
        return request.response()

    async def get_kv_list_by_namespace(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        namespace = _required(request, "namespace")
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
        config = self._get_config().updated(props)
        self._set_config(config)
        log.info("namesrv config updated by %s: %s", peer.addr, ", ".join(f"{k}={v}" for k, v in props.items()))
        return request.response()

    async def get_namesrv_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=format_properties(self._get_config().to_properties()).encode())
