"""Client management requests: HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
LOCK_BATCH_MQ / UNLOCK_BATCH_MQ, GET_CONSUMER_CONNECTION_LIST, GET_PRODUCER_CONNECTION_LIST.

Membership changes are announced to the group's members with oneway
NOTIFY_CONSUMER_IDS_CHANGED requests by `GroupNotifier`, which owns the send
tasks (closed with the broker).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from orbitmq.broker.consumers import ClientChannel, ConsumerRegistry, Subscription
from orbitmq.broker.handlers.fields import (
    Registry,
    group_field,
    integer_in,
    is_json_integer,
    json_object,
    legal_group,
    legal_topic,
    objects_in,
    optional_group_field,
    string_in,
    text,
)
from orbitmq.broker.locks import QueueKey, QueueLocks
from orbitmq.broker.producers import ProducerRegistry
from orbitmq.broker.sqlfilter import ConsumerFilterTable
from orbitmq.broker.subscriptions import SubscriptionGroupTable
from orbitmq.broker.topics import PERM_READ, PERM_WRITE, TopicTable
from orbitmq.common import jsonbody
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.common.names import retry_topic
from orbitmq.errors import ConnectError, RequestTimeout, SystemError_
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import LanguageCode, RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.header_base import INT64
from orbitmq.remoting.headers import NotifyConsumerIdsChangedRequestHeader
from orbitmq.store.api import MessageStore

log = logging.getLogger("orbitmq.broker")

#: Clients older than V3_1_8_SNAPSHOT cannot answer forwarded admin requests.
MIN_FORWARD_VERSION = 62
#: How long a forwarded admin request may take at the consumer (RocketMQ allows 10 s).
FORWARD_TIMEOUT_S = 10.0


def language_name(code: int) -> str:
    try:
        return LanguageCode(code).name
    except ValueError:
        return "OTHER"


def parse_queues(data: dict[str, Any], what: str) -> list[QueueKey]:
    """`data["mqSet"]`: MessageQueue objects with a legal topic and a queue id that is an int32 >= 0."""
    queues = []
    for item in objects_in(data, "mqSet", what):
        queue_id = item.get("queueId")
        if isinstance(queue_id, bool) or not isinstance(queue_id, int) or not 0 <= queue_id <= 0x7FFFFFFF:
            raise SystemError_(f"bad MessageQueue in {what}.mqSet: queueId must be an integer 0..2^31-1")
        broker = string_in(item, "brokerName", what)
        queues.append(QueueKey(legal_topic(string_in(item, "topic", what)), broker, queue_id))
    return queues


class GroupNotifier:
    """Sends NOTIFY_CONSUMER_IDS_CHANGED (oneway) to every member of a group; owns the send tasks."""

    def __init__(
        self, consumers: ConsumerRegistry, groups: SubscriptionGroupTable, enabled: Callable[[], bool] = lambda: True
    ) -> None:
        self._consumers = consumers
        self._groups = groups
        #: notifyConsumerIdsChangedEnable of the broker, read at each change.
        self._enabled = enabled
        self._tasks: set[asyncio.Task[None]] = set()

    def group_changed(self, group: str) -> None:
        if not self._enabled():
            return
        config = self._groups.get(group)
        if config is not None and not config.notify_consumer_ids_changed_enable:
            return
        info = self._consumers.get(group)
        if info is None:
            return
        for client in list(info.channels.values()):
            task = asyncio.ensure_future(self._send(client.channel, group))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _send(peer: Peer, group: str) -> None:
        cmd = RemotingCommand.request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
            NotifyConsumerIdsChangedRequestHeader(consumer_group=group).to_ext_fields(),
            oneway=True,
        )
        try:
            await peer.invoke_oneway(cmd)
        except ConnectError:
            pass  # the member is gone; its own disconnect triggers another notice

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=1.0)


class ClientHandlers:
    def __init__(
        self,
        *,
        broker_name: str,
        topics: TopicTable,
        groups: SubscriptionGroupTable,
        consumers: ConsumerRegistry,
        producers: ProducerRegistry,
        locks: QueueLocks,
        notifier: GroupNotifier,
        clock_ms: Callable[[], int],
        topics_changed: Callable[[], None],
        groups_changed: Callable[[], None],
        filters: ConsumerFilterTable | None = None,
        store: MessageStore | None = None,
    ) -> None:
        #: Refuses SQL92 subscriptions the broker cannot run and compiles the others once.
        self.filters = filters if filters is not None else ConsumerFilterTable(lambda: True)
        self.broker_name = broker_name
        self.topics = topics
        self.groups = groups
        self.consumers = consumers
        self.producers = producers
        self.locks = locks
        self.notifier = notifier
        self.clock_ms = clock_ms
        self.topics_changed = topics_changed
        self.groups_changed = groups_changed
        #: Reads the record a CONSUME_MESSAGE_DIRECTLY request names (None: forward it unchanged).
        self.store = store

    def register(self, server: Registry) -> None:
        server.register(RequestCode.HEART_BEAT, self.heart_beat)
        server.register(RequestCode.UNREGISTER_CLIENT, self.unregister_client)
        server.register(RequestCode.GET_CONSUMER_LIST_BY_GROUP, self.consumer_list)
        server.register(RequestCode.LOCK_BATCH_MQ, self.lock_batch)
        server.register(RequestCode.UNLOCK_BATCH_MQ, self.unlock_batch)
        server.register(RequestCode.GET_CONSUMER_CONNECTION_LIST, self.consumer_connections)
        server.register(RequestCode.GET_PRODUCER_CONNECTION_LIST, self.producer_connections)
        server.register(RequestCode.CHECK_CLIENT_CONFIG, self.check_client_config)
        server.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self.forward_to_consumer)
        server.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self.forward_to_consumer)
        server.register(RequestCode.GET_ALL_PRODUCER_INFO, self.all_producers)
        server.on_disconnect(self.channel_closed)

    # --- connections --------------------------------------------------------------

    def channel_closed(self, peer: Peer) -> None:
        """A closed connection leaves its groups at once; the remaining members hear of it."""
        for group in self.consumers.channel_closed(peer.id):
            self.notifier.group_changed(group)
        self.producers.channel_closed(peer.id)

    def scan_expired(self) -> None:
        """Drop connections silent for the expiry time (called every 10 s)."""
        now = self.clock_ms()
        changed = {group for group, _ in self.consumers.scan_expired(now)}
        for group, client in self.producers.scan_expired(now):
            log.info("producer %s of %s expired", client.client_id, group)
        for group in changed:
            log.info("consumer group %s lost expired connections", group)
            self.notifier.group_changed(group)

    # --- handlers -----------------------------------------------------------------

    async def heart_beat(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        data = json_object(request, "heartbeat")
        client_id = string_in(data, "clientID", "heartbeat")
        if not client_id:
            raise SystemError_("heartbeat without clientID")
        consumers = objects_in(data, "consumerDataSet", "heartbeat")
        producers = objects_in(data, "producerDataSet", "heartbeat")
        # Every name is checked before anything is registered or created: a bad
        # heartbeat changes nothing.
        for consumer in consumers:
            if consumer.get("groupName"):
                legal_group(string_in(consumer, "groupName", "heartbeat.consumerDataSet"))
            for sub in objects_in(consumer, "subscriptionDataSet", "heartbeat.consumerDataSet"):
                what = "heartbeat.consumerDataSet.subscriptionDataSet"
                legal_topic(string_in(sub, "topic", what))
                integer_in(sub, "subVersion", what, INT64)
                codes = sub.get("codeSet")
                if codes is not None and (
                    not isinstance(codes, list) or not all(is_json_integer(c, INT64) for c in codes)
                ):
                    raise SystemError_(f"{what}.codeSet must be a list of integers")
                tags = sub.get("tagsSet")
                if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
                    raise SystemError_(f"{what}.tagsSet must be a list of strings")
        for producer in producers:
            if producer.get("groupName"):
                legal_group(string_in(producer, "groupName", "heartbeat.producerDataSet"))
        await self.filters.precompile_heartbeat(data)
        self.filters.check_heartbeat(data)
        now = self.clock_ms()
        channel = ClientChannel(peer, client_id, language_name(request.language), request.version, now)
        topics_created = False
        for consumer in consumers:
            group = string_in(consumer, "groupName", "heartbeat.consumerDataSet")
            if not group:
                continue
            known = group in self.groups
            config = self.groups.find_or_create(group)
            if config is not None:
                if not known:
                    self.groups_changed()
                if config.retry_queue_nums > 0:
                    name = retry_topic(group)
                    if name not in self.topics:
                        self.topics.ensure(name, config.retry_queue_nums, PERM_READ | PERM_WRITE)
                        topics_created = True
            try:
                subscriptions = [Subscription.from_json(s) for s in consumer.get("subscriptionDataSet") or ()]
            except (KeyError, TypeError, ValueError, AttributeError):
                raise SystemError_(f"bad subscription data in the heartbeat of group {group}") from None
            self.filters.register(group, subscriptions)
            changed = self.consumers.register(
                group,
                channel,
                consume_type=string_in(consumer, "consumeType", "heartbeat") or "CONSUME_PASSIVELY",
                message_model=string_in(consumer, "messageModel", "heartbeat") or "CLUSTERING",
                consume_from_where=string_in(consumer, "consumeFromWhere", "heartbeat") or "CONSUME_FROM_LAST_OFFSET",
                subscriptions=subscriptions,
            )
            if changed:
                self.notifier.group_changed(group)
        for producer in producers:
            group = string_in(producer, "groupName", "heartbeat.producerDataSet")
            if group:
                self.producers.register(group, channel)
        if topics_created:
            self.topics_changed()
        return request.response(ResponseCode.SUCCESS)

    async def unregister_client(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        text(request, "clientID")
        producer_group = optional_group_field(request, "producerGroup")
        consumer_group = optional_group_field(request, "consumerGroup")
        if producer_group:
            self.producers.unregister(producer_group, peer.id)
        if consumer_group and self.consumers.unregister(consumer_group, peer.id):
            self.notifier.group_changed(consumer_group)
        return request.response(ResponseCode.SUCCESS)

    async def check_client_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """A Java push consumer asks before it starts whether the broker can run its filter."""
        data = json_object(request, "check client config")
        subscription = data.get("subscriptionData")
        if not isinstance(subscription, dict):
            raise SystemError_("check client config body has no subscriptionData object")
        what = "check client config.subscriptionData"
        kind = string_in(subscription, "expressionType", what) or "TAG"
        expression = string_in(subscription, "subString", what)
        await self.filters.precompile(kind, expression)
        refused = self.filters.refusal(kind, expression)
        if refused is not None:
            return request.response(*refused)
        return request.response(ResponseCode.SUCCESS)

    async def forward_to_consumer(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """GET_CONSUMER_RUNNING_INFO / CONSUME_MESSAGE_DIRECTLY from an admin tool: ask the
        consumer over its own connection and hand its answer back."""
        group = group_field(request, "consumerGroup")
        client_id = text(request, "clientId")
        client = self.consumers.find_channel(group, client_id)
        if client is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        if client.version < MIN_FORWARD_VERSION:
            return request.response(
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{group}> Version <{client.version}> too low to finish, please upgrade it to V3_1_8_SNAPSHOT",
            )
        fields = dict(request.ext_fields or {})
        body = request.body
        if request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY and self.store is not None:
            # The client decodes the stored record from the body and reads brokerName from
            # the header: the admin tool sends only the message id, the broker adds both.
            fields["brokerName"] = self.broker_name
            body = self._stored_record(text(request, "msgId"))
        forwarded = RemotingCommand.request(request.code, fields, body)
        try:
            answer = await client.channel.invoke(forwarded, FORWARD_TIMEOUT_S)
        except (ConnectError, RequestTimeout) as exc:
            return request.response(
                ResponseCode.SYSTEM_ERROR, f"invoke consumer <{group}> <{client_id}> Exception: {exc}"
            )
        return request.response(answer.code, answer.remark, answer.ext_fields, answer.body)

    def _stored_record(self, msg_id: str) -> bytes:
        assert self.store is not None
        try:
            offset = parse_offset_msg_id(msg_id).commit_log_offset
        except ValueError:
            raise SystemError_(f"bad message id {msg_id!r}: not an offset message id (32 or 56 hex digits)") from None
        found = self.store.select_one_message_by_offset(offset) if offset >= 0 else None
        if found is None:
            raise SystemError_(f"can not find message by the offset, {offset}")
        try:
            return bytes(found.buffer)  # copied: the forward may outlive the pinned file
        finally:
            found.release()

    async def all_producers(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """mqadmin producer: every producer group's connections (ProducerTableInfo)."""
        return request.response(body=jsonbody.dumps(self.producers.table_json()))

    async def consumer_list(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        group = group_field(request, "consumerGroup")
        info = self.consumers.get(group)
        if info is None or not info.channels:
            return request.response(
                ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}"
            )
        return request.response(body=jsonbody.dumps({"consumerIdList": info.client_ids()}))

    async def lock_batch(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        data = json_object(request, "lock batch")
        group = string_in(data, "consumerGroup", "lock batch")
        client_id = string_in(data, "clientId", "lock batch")
        if not group or not client_id:
            raise SystemError_("lock request needs consumerGroup and clientId")
        legal_group(group)
        queues = parse_queues(data, "lock batch")
        granted = self.locks.try_lock_batch(
            group, queues, client_id, self.clock_ms(), is_alive=lambda cid: self.consumers.is_alive(group, cid)
        )
        body = {"lockOKMQSet": [mq.to_json() for mq in queues if mq in granted]}
        return request.response(body=jsonbody.dumps(body))

    async def unlock_batch(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        data = json_object(request, "unlock batch")
        group = legal_group(string_in(data, "consumerGroup", "unlock batch"))
        client_id = string_in(data, "clientId", "unlock batch")
        self.locks.unlock_batch(group, parse_queues(data, "unlock batch"), client_id)
        return request.response(ResponseCode.SUCCESS)

    async def consumer_connections(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        group = group_field(request, "consumerGroup")
        info = self.consumers.get(group)
        if info is None or not info.channels:
            return request.response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        return request.response(body=jsonbody.dumps(info.connection_json()))

    async def producer_connections(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        group = group_field(request, "producerGroup")
        if not self.producers.channels(group):
            return request.response(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        return request.response(body=jsonbody.dumps(self.producers.connection_json(group)))
