"""The admin API: RocketMQ's admin requests to NameServers and brokers, over `orbitmq.remoting`.

`AdminClient` is what `mqadmin`'s DefaultMQAdminExt is to Java: one remoting
client, a list of NameServers and one coroutine per admin request. It needs no
producer or consumer; sends, pulls and queries are single requests built here.

Guarantees:

* Every call either returns decoded data or raises an `OrbitMQError`:
  `BrokerError` (with the peer's code and remark) when a peer refused,
  `ConnectError` / `RequestTimeout` when no peer answered.
* NameServer requests go to each configured NameServer in turn until one
  answers; a NameServer's refusal (e.g. TOPIC_NOT_EXIST) is final.
* Nothing is retried against brokers: an admin command reports what happened.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from orbitmq.admin import wire
from orbitmq.admin.models import (
    ClusterInfo,
    Connection,
    ConsumerConnection,
    ConsumeStats,
    PullResult,
    QueueStat,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRouteData,
)
from orbitmq.client.acl import AclCredentials, make_remoting_client
from orbitmq.client.api import MQClientAPI
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import SEND_STATUS_BY_CODE, SendResult
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.errors import BrokerError, ClientError, ConnectError, CorruptRecord, RemotingError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import LanguageCode, RemotingCommand
from orbitmq.remoting.header_base import CommandHeader
from orbitmq.remoting.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetMaxOffsetRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PutKVConfigRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryMessageRequestHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SendMessageRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from orbitmq.remoting.sysflag import PullSysFlag
from orbitmq.remoting.tls import TlsSettings

#: Group names the tools use when the user names none (RocketMQ's tools use
#: TOOLS_CONSUMER for pulls; sends need some producer group).
TOOLS_CONSUMER_GROUP = "TOOLS_CONSUMER"
TOOLS_PRODUCER_GROUP = "TOOLS_PRODUCER"


_default_credentials: AclCredentials | None = None
_default_tls: TlsSettings | None = None


def set_default_credentials(credentials: AclCredentials | None) -> None:
    """ACL credentials for AdminClients created without any (the CLI's --accessKey/--secretKey)."""
    global _default_credentials
    _default_credentials = credentials


def set_default_tls(tls: TlsSettings | None) -> None:
    """TLS settings for AdminClients created without any (the CLI's --tls options)."""
    global _default_tls
    _default_tls = tls


def default_client_options() -> dict[str, Any]:
    """The CLI's ACL and TLS settings as client options (for the commands that run a Producer)."""
    options: dict[str, Any] = {}
    creds = _default_credentials
    if creds is not None:
        options.update(access_key=creds.access_key, secret_key=creds.secret_key,
                       signature_version=creds.signature_version)
        if creds.security_token:
            options["security_token"] = creds.security_token
    if _default_tls is not None:
        options["tls"] = _default_tls
    return options


class AdminClient:
    """Admin requests against the NameServers `namesrv_addrs` and the brokers they list.

    Use as `async with AdminClient(["127.0.0.1:9876"]) as admin: ...`; the
    client owns its connections and closes them on exit. `timeout` (seconds)
    bounds each request. With `credentials` (or defaults set by
    `set_default_credentials`) every request is signed for a plain-ACL broker.
    With `tls` (or defaults set by `set_default_tls`) whose tls.enable is on,
    every connection speaks TLS.
    """

    def __init__(
        self, namesrv_addrs: Sequence[str], *, timeout: float = 5.0, credentials: AclCredentials | None = None,
        tls: TlsSettings | None = None,
    ) -> None:
        addrs = [a.strip() for a in namesrv_addrs if a.strip()]
        if not addrs:
            raise ClientError("no NameServer address given (use -n host:port or NAMESRV_ADDR)")
        self.namesrv_addrs: tuple[str, ...] = tuple(addrs)
        self.timeout = timeout
        creds = credentials or _default_credentials
        settings = tls or _default_tls
        self._remoting = make_remoting_client(
            creds, connect_timeout=min(timeout, 3.0),
            ssl_context=settings.client_context() if settings is not None else None,
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._remoting.close()

    # --- plumbing -------------------------------------------------------------

    async def _invoke(self, addr: str, cmd: RemotingCommand) -> RemotingCommand:
        return await self._remoting.invoke(addr, cmd, timeout=self.timeout)

    async def _call(
        self,
        addr: str,
        code: int,
        fields: CommandHeader | Mapping[str, str] | None = None,
        body: bytes | None = None,
        ok: tuple[int, ...] = (ResponseCode.SUCCESS,),
        compact: bool = False,
    ) -> RemotingCommand:
        """One request to `addr`; a response code outside `ok` raises BrokerError.

        `compact` sends the header under its compact keys (the V2 send header's letters)."""
        if isinstance(fields, CommandHeader):
            ext_fields = fields.to_compact_fields() if compact else fields.to_ext_fields()
        else:
            ext_fields = dict(fields or {})  # ACL config fields have no typed header
        response = await self._invoke(addr, RemotingCommand.request(code, ext_fields, body))
        if response.code not in ok:
            raise BrokerError.for_code(response.code, response.remark)
        return response

    async def _namesrv(self, code: int, fields: CommandHeader | None = None) -> RemotingCommand:
        """Ask each NameServer in turn until one answers; raise its refusal or the last failure."""
        last: RemotingError | None = None
        for addr in self.namesrv_addrs:
            try:
                return await self._call(addr, code, fields)
            except RemotingError as exc:
                last = exc
        assert last is not None
        raise ConnectError(f"no NameServer answered ({', '.join(self.namesrv_addrs)}): {last}") from last

    # --- NameServer -------------------------------------------------------------

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The topic's route, brokers in name order; TopicNotExist when no NameServer knows it."""
        response = await self._namesrv(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))
        try:
            return TopicRouteData.from_json(wire.json_object(response.body_bytes())).sorted()
        except ValueError as exc:
            raise wire.bad_body(f"topic route: {exc}") from None

    async def cluster_info(self) -> ClusterInfo:
        response = await self._namesrv(RequestCode.GET_BROKER_CLUSTER_INFO)
        try:
            return ClusterInfo.from_json(wire.json_object(response.body_bytes()))
        except ValueError as exc:
            raise wire.bad_body(f"cluster info: {exc}") from None

    async def topic_list(self, cluster: str | None = None) -> list[str]:
        """All topic names the NameServer knows, or those on `cluster`'s brokers, sorted."""
        if cluster is None:
            response = await self._namesrv(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        else:
            response = await self._namesrv(RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster=cluster))
        body = wire.json_object(response.body_bytes())
        return sorted(str(t) for t in body.get("topicList") or [])

    async def delete_topic_in_namesrv(self, topic: str, cluster: str | None = None) -> None:
        fields = DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster or None)
        # Every NameServer keeps its own table, so each must forget the topic.
        for addr in self.namesrv_addrs:
            await self._call(addr, RequestCode.DELETE_TOPIC_IN_NAMESRV, fields)

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        """PUT_KV_CONFIG on every NameServer (each keeps its own KV table)."""
        for addr in self.namesrv_addrs:
            await self._call(addr, RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader(namespace=namespace, key=key, value=value))

    async def cluster_masters(self, cluster: str) -> dict[str, str]:
        """broker name -> master address of every broker in `cluster`; ClientError if none."""
        masters = (await self.cluster_info()).master_addrs(cluster)
        if not masters:
            raise ClientError(f"cluster {cluster!r} has no master broker registered with the NameServer")
        return masters

    # --- topics and brokers -------------------------------------------------------

    async def create_topic(
        self, broker_addr: str, config: TopicConfig, default_topic: str = names.AUTO_CREATE_TOPIC_KEY_TOPIC, attributes: str | None = None
    ) -> None:
        """UPDATE_AND_CREATE_TOPIC with the config's queues, perm, filter type, sysflag and order.

        `attributes` changes topic attributes ("+name=value,-name"); the config's own are sent as
        "+name=value" items when it is None. Attributes not named are kept by the broker.
        """
        if attributes is None and config.attributes:
            attributes = ",".join(f"+{name}={value}" for name, value in config.attributes)
        header = CreateTopicRequestHeader(
            topic=config.topic_name, default_topic=default_topic, read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums, perm=config.perm, topic_filter_type=config.topic_filter_type,
            order=config.order, topic_sys_flag=config.topic_sys_flag, attributes=attributes,
        )
        await self._call(broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header)

    async def delete_topic_in_broker(self, broker_addr: str, topic: str) -> None:
        await self._call(broker_addr, RequestCode.DELETE_TOPIC_IN_BROKER, DeleteTopicRequestHeader(topic=topic))

    async def broker_runtime_info(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO: the broker's figures as RocketMQ names them (putTps, ...)."""
        response = await self._call(broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO)
        table = wire.json_object(response.body_bytes()).get("table") or {}
        return {str(k): str(v) for k, v in table.items()}

    async def topic_stats(self, broker_addr: str, topic: str) -> list[QueueStat]:
        response = await self._call(broker_addr, RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic=topic))
        body = wire.json_object(response.body_bytes())
        stats = [
            QueueStat(
                queue,
                int(v.get("minOffset", 0)),
                int(v.get("maxOffset", 0)),
                int(v.get("lastUpdateTimestamp", 0)),
            )
            for queue, v in wire.queue_keyed(body.get("offsetTable"))
        ]
        return sorted(stats, key=lambda s: s.queue)

    async def create_subscription_group(self, broker_addr: str, config: SubscriptionGroupConfig) -> None:
        body = wire.dump_json(config.to_json())
        await self._call(broker_addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)

    async def subscription_groups(self, broker_addr: str) -> dict[str, SubscriptionGroupConfig]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG: the broker's subscription groups by name."""
        response = await self._call(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        table = wire.json_object(response.body_bytes()).get("subscriptionGroupTable") or {}
        try:
            configs = [SubscriptionGroupConfig.from_json(v) for v in table.values()]
        except (KeyError, TypeError, ValueError) as exc:
            raise wire.bad_body(f"subscription group table: {exc}") from None
        return {c.group_name: c for c in sorted(configs, key=lambda c: c.group_name)}

    async def delete_subscription_group(self, broker_addr: str, group: str, remove_offset: bool = False) -> None:
        fields = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=remove_offset)
        await self._call(broker_addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, fields)

    async def consumer_connection(self, broker_addr: str, group: str) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST; ConsumerNotOnline when no client of the group is connected."""
        response = await self._call(
            broker_addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, GetConsumerConnectionListRequestHeader(consumer_group=group)
        )
        try:
            return ConsumerConnection.from_json(wire.json_object(response.body_bytes()))
        except (TypeError, ValueError, AttributeError) as exc:
            raise wire.bad_body(f"consumer connection: {exc}") from None

    async def producer_connection(self, broker_addr: str, group: str) -> list[Connection]:
        """GET_PRODUCER_CONNECTION_LIST: the clients of a producer group connected to one broker.

        The broker answers SYSTEM_ERROR ("... not exist") when none is; that comes back as [].
        """
        response = await self._call(
            broker_addr, RequestCode.GET_PRODUCER_CONNECTION_LIST,
            GetProducerConnectionListRequestHeader(producer_group=group),
            ok=(ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR),
        )
        if response.code != ResponseCode.SUCCESS:
            return []
        try:
            return list(ConsumerConnection.from_json(wire.json_object(response.body_bytes())).connections)
        except (TypeError, ValueError, AttributeError) as exc:
            raise wire.bad_body(f"producer connection: {exc}") from None

    async def consumer_running_info(
        self, broker_addr: str, group: str, client_id: str, jstack: bool = False
    ) -> dict[str, Any]:
        """GET_CONSUMER_RUNNING_INFO, forwarded by the broker to the client: its ConsumerRunningInfo body.

        `mqTable` comes back as an object-keyed map (read it with `wire.queue_keyed`).
        """
        fields = GetConsumerRunningInfoRequestHeader(consumer_group=group, client_id=client_id, jstack_enable=jstack)
        response = await self._call(broker_addr, RequestCode.GET_CONSUMER_RUNNING_INFO, fields)
        return wire.json_object(response.body_bytes())

    async def consume_message_directly(self, group: str, client_id: str, offset_msg_id: str) -> dict[str, Any]:
        """CONSUME_MESSAGE_DIRECTLY to the broker the offset id names: the ConsumeMessageDirectlyResult body."""
        try:
            broker_addr = parse_offset_msg_id(offset_msg_id).store_host
        except ValueError as exc:
            raise ClientError(f"{offset_msg_id!r} is not an offset message id: {exc}") from None
        fields = ConsumeMessageDirectlyResultRequestHeader(consumer_group=group, client_id=client_id, msg_id=offset_msg_id)
        response = await self._call(broker_addr, RequestCode.CONSUME_MESSAGE_DIRECTLY, fields)
        return wire.json_object(response.body_bytes())

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_CONFIG: the broker's effective settings under RocketMQ's key names."""
        response = await self._call(broker_addr, RequestCode.GET_BROKER_CONFIG)
        return wire.parse_properties(response.body_bytes())

    async def update_broker_config(self, broker_addr: str, settings: Mapping[str, str]) -> None:
        """UPDATE_BROKER_CONFIG with `key=value` lines; the broker refuses unknown keys or bad values."""
        await self._call(broker_addr, RequestCode.UPDATE_BROKER_CONFIG, None, wire.format_properties(settings))

    # --- consumer progress and offsets -------------------------------------------

    async def consume_stats(self, broker_addr: str, group: str, topic: str | None = None) -> ConsumeStats:
        fields = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic or None)
        response = await self._call(broker_addr, RequestCode.GET_CONSUME_STATS, fields)
        try:
            return ConsumeStats.from_json(wire.json_object(response.body_bytes()))
        except ValueError as exc:
            raise wire.bad_body(f"consume stats: {exc}") from None

    async def reset_offset_by_time(
        self, broker_addr: str, topic: str, group: str, timestamp_ms: int, force: bool = True, cplus: bool = False,
    ) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET: the broker moves the group's offsets and tells its consumers.

        `cplus` marks the request as a C++ client's (mqadmin's `resetOffsetByTime -c`): the broker
        then pushes the reset to the consumers in ResetOffsetBodyForC's list form."""
        fields = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp_ms, is_force=force)
        request = RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, fields.to_ext_fields())
        if cplus:
            request.language = LanguageCode.CPP
        response = await self._invoke(broker_addr, request)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError.for_code(response.code, response.remark)
        raw = response.body_bytes()
        if not raw:
            return {}
        table = wire.queue_keyed(wire.json_object(raw).get("offsetTable"))
        return dict(sorted((queue, int(offset)) for queue, offset in table))

    async def query_consumer_offset(self, broker_addr: str, group: str, queue: MessageQueue) -> int | None:
        """The group's committed offset for one queue, None when the broker has none."""
        fields = QueryConsumerOffsetRequestHeader(consumer_group=group, topic=queue.topic, queue_id=queue.queue_id)
        response = await self._call(
            broker_addr,
            RequestCode.QUERY_CONSUMER_OFFSET,
            fields,
            ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return None
        return int(response.field("offset", "0") or 0)

    async def max_offset(self, broker_addr: str, queue: MessageQueue) -> int:
        fields = GetMaxOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id)
        response = await self._call(broker_addr, RequestCode.GET_MAX_OFFSET, fields)
        return int(response.field("offset", "0") or 0)

    async def search_offset(self, broker_addr: str, queue: MessageQueue, timestamp_ms: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP: the queue offset of the message stored closest to the time."""
        fields = SearchOffsetRequestHeader(topic=queue.topic, queue_id=queue.queue_id, timestamp=timestamp_ms)
        response = await self._call(broker_addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, fields)
        return int(response.field("offset", "0") or 0)

    async def update_consumer_offset(self, broker_addr: str, group: str, queue: MessageQueue, offset: int) -> None:
        """UPDATE_CONSUMER_OFFSET, answered (not oneway) so a failure is seen."""
        fields = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=queue.topic, queue_id=queue.queue_id, commit_offset=offset
        )
        await self._call(broker_addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields)

    # --- messages -----------------------------------------------------------------

    async def send_message(
        self,
        broker_addr: str,
        queue: MessageQueue,
        body: bytes,
        *,
        tags: str | None = None,
        keys: Sequence[str] = (),
        producer_group: str = TOOLS_PRODUCER_GROUP,
    ) -> SendResult:
        """SEND_MESSAGE_V2 of one message to one queue, with a fresh UNIQ_KEY."""
        props: dict[str, str] = {}
        if keys:
            props[mc.KEYS] = mc.KEY_SEPARATOR.join(keys)
        if tags:
            props[mc.TAGS] = tags
        return await self.send_with_properties(broker_addr, queue, body, props, producer_group=producer_group)

    async def send_with_properties(
        self,
        broker_addr: str,
        queue: MessageQueue,
        body: bytes,
        properties: Mapping[str, str],
        *,
        flag: int = 0,
        producer_group: str = TOOLS_PRODUCER_GROUP,
    ) -> SendResult:
        """SEND_MESSAGE_V2 of one message with these properties (a fresh UNIQ_KEY unless they hold one)."""
        props = dict(properties)
        props[mc.WAIT_STORE_MSG_OK] = "true"
        uniq = props.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or wire.new_unique_id()
        props[mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = uniq
        header = SendMessageRequestHeader(
            producer_group=producer_group, topic=queue.topic, default_topic=names.AUTO_CREATE_TOPIC_KEY_TOPIC,
            default_topic_queue_nums=4, queue_id=queue.queue_id, sys_flag=0, born_timestamp=int(time.time() * 1000),
            flag=flag, properties=mc.encode_properties(props), reconsume_times=0, unit_mode=False, batch=False,
            bname=queue.broker_name,
        )
        response = await self._call(
            broker_addr, RequestCode.SEND_MESSAGE_V2, header, body, ok=tuple(SEND_STATUS_BY_CODE), compact=True
        )
        written = MessageQueue(queue.topic, queue.broker_name, int(response.field("queueId", str(queue.queue_id)) or 0))
        return SendResult(
            SEND_STATUS_BY_CODE[response.code],
            uniq,
            response.field("msgId", "") or "",
            written,
            int(response.field("queueOffset", "0") or 0),
        )

    async def pull(
        self,
        broker_addr: str,
        queue: MessageQueue,
        offset: int,
        max_nums: int = 32,
        group: str = TOOLS_CONSUMER_GROUP,
        expression: str = "*",
    ) -> PullResult:
        """One non-suspending PULL_MESSAGE with a tag subscription (`*` by default); never commits an offset.

        The broker filters by tag hash; as Java's pull consumer, the caller filters the tags exactly."""
        api = MQClientAPI(self._remoting, self.timeout)
        try:
            return await api.pull(
                # SUBSCRIPTION: the request carries its own subscription, so the broker needs no heartbeat.
                broker_addr, queue, group=group, offset=offset, max_nums=max_nums, sys_flag=PullSysFlag.SUBSCRIPTION,
                commit_offset=0, suspend_ms=0, sub_expression=expression, sub_version=0, timeout=self.timeout,
            )
        except (CorruptRecord, ClientError, ValueError) as exc:
            raise wire.bad_body(f"pull answer: {exc}") from None

    async def view_message(self, broker_addr: str, commit_log_offset: int) -> MessageExt:
        """VIEW_MESSAGE_BY_ID: the record at a commit-log offset."""
        response = await self._call(
            broker_addr, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=commit_log_offset)
        )
        found = wire.decode_messages(response.body_bytes())
        if not found:
            raise BrokerError.for_code(ResponseCode.SYSTEM_ERROR, f"no message at offset {commit_log_offset}")
        return found[0]

    async def query_message(
        self,
        broker_addr: str,
        topic: str,
        key: str,
        *,
        unique_key: bool = False,
        max_num: int = 64,
        begin_ms: int = 0,
        end_ms: int | None = None,
    ) -> list[MessageExt]:
        """QUERY_MESSAGE by KEYS entry (or by UNIQ_KEY with `unique_key`); [] when nothing matches."""
        fields = QueryMessageRequestHeader(
            topic=topic, key=key, max_num=max_num, begin_timestamp=begin_ms,
            end_timestamp=end_ms if end_ms is not None else 2**62, unique_key_query=unique_key,
        )
        response = await self._call(
            broker_addr,
            RequestCode.QUERY_MESSAGE,
            fields,
            ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        messages = wire.decode_messages(response.body_bytes())
        # The index matches hashes; keep only real matches, as the Java admin does.
        if unique_key:
            return [m for m in messages if m.unique_key == key and m.topic == topic]
        return [m for m in messages if key in m.keys and m.topic == topic]

    # --- NameServer KV, permissions and configuration (mqadmin's namesrv commands) -----------

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        """GET_KV_CONFIG from the first NameServer that answers; None when it holds no such key."""
        last: RemotingError | None = None
        for addr in self.namesrv_addrs:
            try:
                response = await self._call(
                    addr, RequestCode.GET_KV_CONFIG, {"namespace": namespace, "key": key},
                    ok=(ResponseCode.SUCCESS, ResponseCode.QUERY_NOT_FOUND),
                )
            except RemotingError as exc:
                last = exc
                continue
            return None if response.code == ResponseCode.QUERY_NOT_FOUND else response.field("value")
        raise ConnectError(f"no NameServer answered ({', '.join(self.namesrv_addrs)}): {last}") from last

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        """DELETE_KV_CONFIG on every NameServer."""
        for addr in self.namesrv_addrs:
            await self._call(addr, RequestCode.DELETE_KV_CONFIG, {"namespace": namespace, "key": key})

    async def wipe_write_perm(self, namesrv_addr: str, broker_name: str) -> int:
        """WIPE_WRITE_PERM_OF_BROKER on one NameServer: how many of the broker's topics lost write."""
        response = await self._call(namesrv_addr, RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": broker_name})
        return int(response.field("wipeTopicCount", "0") or 0)

    async def add_write_perm(self, namesrv_addr: str, broker_name: str) -> int:
        """ADD_WRITE_PERM_OF_BROKER on one NameServer: how many of the broker's topics got write back."""
        response = await self._call(namesrv_addr, RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": broker_name})
        return int(response.field("addTopicCount", "0") or 0)

    async def namesrv_config(self, namesrv_addr: str) -> dict[str, str]:
        """GET_NAMESRV_CONFIG of one NameServer, in the order it lists its keys."""
        response = await self._call(namesrv_addr, RequestCode.GET_NAMESRV_CONFIG)
        return wire.parse_properties(response.body_bytes())

    async def update_namesrv_config(self, namesrv_addr: str, settings: Mapping[str, str]) -> None:
        await self._call(namesrv_addr, RequestCode.UPDATE_NAMESRV_CONFIG, None, wire.format_properties(settings))

    # --- broker inspection and maintenance ----------------------------------------------------

    async def topic_consumed_by(self, broker_addr: str, topic: str) -> list[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO: the groups with offsets or subscriptions on the topic."""
        response = await self._call(broker_addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": topic})
        return sorted(str(g) for g in wire.json_object(response.body_bytes()).get("groupList") or [])

    async def broker_stats_data(self, broker_addr: str, stats_name: str, stats_key: str) -> dict[str, Any]:
        """VIEW_BROKER_STATS_DATA: statsMinute/statsHour/statsDay of one BrokerStatsManager item."""
        response = await self._call(
            broker_addr, RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": stats_name, "statsKey": stats_key}
        )
        return wire.json_object(response.body_bytes())

    async def broker_consume_stats(self, broker_addr: str, is_order: bool = False) -> dict[str, Any]:
        """GET_BROKER_CONSUME_STATS: ConsumeStatsList (offset tables keyed by MessageQueue objects)."""
        response = await self._call(
            broker_addr, RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "true" if is_order else "false"}
        )
        return wire.json_object(response.body_bytes())

    async def all_producer_info(self, broker_addr: str) -> dict[str, list[dict[str, Any]]]:
        """GET_ALL_PRODUCER_INFO: ProducerTableInfo.data, producer group -> its instances."""
        response = await self._call(broker_addr, RequestCode.GET_ALL_PRODUCER_INFO)
        data = wire.json_object(response.body_bytes()).get("data") or {}
        return {str(g): [dict(p) for p in (v or []) if isinstance(p, dict)] for g, v in sorted(data.items())}

    async def system_topics_from_broker(self, broker_addr: str) -> list[str]:
        """GET_SYSTEM_TOPIC_LIST_FROM_BROKER."""
        response = await self._call(broker_addr, RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER)
        return [str(t) for t in wire.json_object(response.body_bytes()).get("topicList") or []]

    async def all_topic_config(self, broker_addr: str) -> dict[str, Any]:
        """GET_ALL_TOPIC_CONFIG: TopicConfigSerializeWrapper (topicConfigTable, dataVersion)."""
        response = await self._call(broker_addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        return wire.json_object(response.body_bytes())

    async def all_subscription_group_config(self, broker_addr: str) -> dict[str, Any]:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG: SubscriptionGroupWrapper as the broker wrote it."""
        response = await self._call(broker_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return wire.json_object(response.body_bytes())

    async def maintenance(self, broker_addr: str, code: int) -> bool:
        """CLEAN_EXPIRED_CONSUMEQUEUE, CLEAN_UNUSED_TOPIC or DELETE_EXPIRED_COMMITLOG; True on SUCCESS."""
        await self._call(broker_addr, code)
        return True

    async def query_consume_queue(
        self, broker_addr: str, topic: str, queue_id: int, index: int, count: int, group: str | None = None,
    ) -> dict[str, Any]:
        """QUERY_CONSUME_QUEUE: QueryConsumeQueueResponseBody."""
        fields = {"topic": topic, "queueId": str(queue_id), "index": str(index), "count": str(count)}
        if group:
            fields["consumerGroup"] = group
        response = await self._call(broker_addr, RequestCode.QUERY_CONSUME_QUEUE, fields)
        return wire.json_object(response.body_bytes())

    async def min_offset(self, broker_addr: str, queue: MessageQueue) -> int:
        response = await self._call(
            broker_addr, RequestCode.GET_MIN_OFFSET, {"topic": queue.topic, "queueId": str(queue.queue_id)}
        )
        return int(response.field("offset", "0") or 0)

    # --- helpers used by several commands -------------------------------------------

    async def pick_write_queue(
        self, topic: str, broker_name: str | None = None, queue_id: int | None = None
    ) -> tuple[str, MessageQueue]:
        """(broker address, queue) for a send: the given broker/queue, or a random writable queue."""
        route = await self.topic_route(topic)
        queues = route.write_queues(topic)
        if broker_name is not None:
            queues = [q for q in queues if q.broker_name == broker_name]
        if queue_id is not None:
            queues = [q for q in queues if q.queue_id == queue_id]
        if not queues:
            where = f" on broker {broker_name!r}" if broker_name else ""
            which = f" with queue id {queue_id}" if queue_id is not None else ""
            raise ClientError(f"topic {topic!r} has no writable queue{where}{which}")
        queue = random.choice(queues)
        return route.master_addrs()[queue.broker_name], queue

    async def broker_addr_of(self, topic: str, broker_name: str) -> str:
        """The master address of `broker_name` as the topic's route lists it."""
        route = await self.topic_route(topic)
        data = route.broker(broker_name)
        if data is None or not data.master_addr:
            known = ", ".join(b.broker_name for b in route.broker_datas) or "none"
            raise ClientError(f"broker {broker_name!r} does not serve topic {topic!r} (brokers: {known})")
        return data.master_addr

    # --- plain ACL (codes 50-54) ---------------------------------------------------

    # --- timed messages (OrbitMQ's own codes, and RocketMQ 5.3's RECALL_MESSAGE) ---------------

    async def list_timers(self, broker_addr: str, topic: str, max_count: int = 1000) -> list[dict[str, Any]]:
        """Pending timed messages of `topic` on one broker, by due time:
        dicts with topic, msgId (UNIQ_KEY), deliverMs, queueOffset, commitLogOffset."""
        response = await self._call(
            broker_addr, RequestCode.LIST_TIMER_MESSAGES, {"topic": topic, "maxCount": str(max_count)}
        )
        timers = wire.json_object(response.body_bytes()).get("timers") or []
        return [dict(t) for t in timers if isinstance(t, dict)]

    async def cancel_timer(self, broker_addr: str, topic: str, msg_id: str) -> dict[str, Any]:
        """Cancel one pending timed message (durably); BrokerError 22 QUERY_NOT_FOUND when none waits."""
        response = await self._call(broker_addr, RequestCode.CANCEL_TIMER_MESSAGE, {"topic": topic, "msgId": msg_id})
        return dict(wire.json_object(response.body_bytes()))

    async def reschedule_timer(self, broker_addr: str, topic: str, msg_id: str, deliver_ms: int) -> dict[str, Any]:
        """Move one pending timed message to `deliver_ms` (same message id); QUERY_NOT_FOUND when none waits."""
        response = await self._call(
            broker_addr, RequestCode.RESCHEDULE_TIMER_MESSAGE,
            {"topic": topic, "msgId": msg_id, "deliverMs": str(deliver_ms)},
        )
        return dict(wire.json_object(response.body_bytes()))

    async def recall_message(self, broker_addr: str, topic: str, recall_handle: str, producer_group: str = "") -> str:
        """RECALL_MESSAGE: cancel the timed message a send's recall handle names; returns its message id."""
        fields = {"topic": topic, "recallHandle": recall_handle}
        if producer_group:
            fields["producerGroup"] = producer_group
        response = await self._call(broker_addr, RequestCode.RECALL_MESSAGE, fields)
        return (response.ext_fields or {}).get("msgId", "")

    async def update_acl_config(self, broker_addr: str, fields: Mapping[str, str]) -> None:
        """UPDATE_AND_CREATE_ACL_CONFIG: create or change one account (CreateAccessConfigRequestHeader fields)."""
        await self._call(broker_addr, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, fields)

    async def delete_acl_config(self, broker_addr: str, access_key: str) -> None:
        await self._call(broker_addr, RequestCode.DELETE_ACL_CONFIG, {"accessKey": access_key})

    async def update_global_white_addrs(self, broker_addr: str, addrs: Sequence[str], acl_file: str | None = None) -> None:
        fields = {"globalWhiteAddrs": ",".join(addrs)}
        if acl_file:
            fields["aclFileFullPath"] = acl_file
        await self._call(broker_addr, RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, fields)

    async def acl_version(self, broker_addr: str) -> dict[str, str]:
        """GET_BROKER_CLUSTER_ACL_INFO: version, allAclFileVersion, brokerName, brokerAddr, clusterName."""
        response = await self._call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_INFO)
        return dict(response.ext_fields or {})

    async def acl_config(self, broker_addr: str) -> dict[str, object]:
        """GET_BROKER_CLUSTER_ACL_CONFIG: globalWhiteAddrs and plainAccessConfigs (secret keys included)."""
        response = await self._call(broker_addr, RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
        return wire.json_object(response.body_bytes())
