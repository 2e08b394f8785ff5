"""Consumer group administration: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
GET_ALL_SUBSCRIPTIONGROUP_CONFIG, DELETE_SUBSCRIPTIONGROUP, GET_ALL_CONSUMER_OFFSET,
GET_CONSUME_STATS, GET_BROKER_CONSUME_STATS (mqadmin brokerConsumeStats),
QUERY_CONSUME_TIME_SPAN, QUERY_TOPIC_CONSUME_BY_WHO, INVOKE_BROKER_TO_RESET_OFFSET (§3.11) and
INVOKE_BROKER_TO_GET_CONSUMER_STATUS (mqadmin getConsumerStatus, asked of each client) and
CLONE_GROUP_OFFSET (mqadmin cloneGroupOffset).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Callable

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.consumers import ConsumerRegistry
from orbitmq.broker.expiry import EXPIRED_POLICY_ATTRIBUTE, POLICY_DLQ, POLICY_DROP
from orbitmq.broker.handlers.fields import (
    Registry,
    boolean,
    group_field,
    integer,
    integer_in,
    json_object,
    legal_group,
    optional_text,
    optional_topic_field,
    topic_field,
)
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.stats import BrokerStats
from orbitmq.broker.subscriptions import SubscriptionGroupConfig, SubscriptionGroupTable
from orbitmq.broker.topics import TopicTable
from orbitmq.common import jsonbody
from orbitmq.common.consume_stats import ConsumeStats, OffsetWrapper
from orbitmq.common.jsonfields import JsonFieldError
from orbitmq.common.queue import MessageQueue
from orbitmq.common.subscription_group import alter_attributes
from orbitmq.errors import ConnectError, RequestTimeout, SystemError_
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import LanguageCode, RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.headers import GetConsumerStatusRequestHeader, ResetOffsetRequestHeader
from orbitmq.store.api import MessageStore

log = logging.getLogger("orbitmq.broker")

#: A group's retry topic gets at most as many queues as an admin may give any topic.
MAX_RETRY_QUEUE_NUMS = 1024
#: Clients older than V3_0_7_SNAPSHOT cannot take a pushed offset reset (nor report their status).
MIN_RESET_VERSION = 28
#: How long a client has to report its offsets (RocketMQ waits five seconds too).
CLIENT_STATUS_TIMEOUT_S = 5.0


class GroupHandlers:
    def __init__(
        self,
        *,
        live: LiveConfig,
        topics: TopicTable,
        groups: SubscriptionGroupTable,
        consumers: ConsumerRegistry,
        offsets: ConsumerOffsetTable,
        store: MessageStore,
        stats: BrokerStats,
        groups_changed: Callable[[], None],
        offsets_changed: Callable[[], None],
    ) -> None:
        self.live = live
        self.topics = topics
        self.groups = groups
        self.consumers = consumers
        self.offsets = offsets
        self.store = store
        self.stats = stats
        self.groups_changed = groups_changed
        self.offsets_changed = offsets_changed

    def register(self, server: Registry) -> None:
        server.register(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, self.create_group)
        server.register(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, self.all_groups)
        server.register(RequestCode.DELETE_SUBSCRIPTIONGROUP, self.delete_group)
        server.register(RequestCode.GET_ALL_CONSUMER_OFFSET, self.all_offsets)
        server.register(RequestCode.GET_CONSUME_STATS, self.consume_stats)
        server.register(RequestCode.GET_BROKER_CONSUME_STATS, self.broker_consume_stats)
        server.register(RequestCode.QUERY_CONSUME_TIME_SPAN, self.consume_time_span)
        server.register(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, self.consumed_by)
        server.register(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, self.reset_offset)
        server.register(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, self.consumer_status)
        server.register(RequestCode.CLONE_GROUP_OFFSET, self.clone_offsets)

    async def create_group(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        what = "SubscriptionGroupConfig"
        data = json_object(request, what)
        raw_name = data.get("groupName")
        legal_group(raw_name if isinstance(raw_name, str) else "")
        integer_in(data, "retryQueueNums", what, (0, MAX_RETRY_QUEUE_NUMS))
        for key in ("retryMaxTimes", "brokerId", "whichBrokerWhenConsumeSlowly"):
            integer_in(data, key, what)
        try:
            config = SubscriptionGroupConfig.from_json({**data, "attributes": None})
            current = self.groups.get(config.group_name)
            attributes = alter_attributes(current.attributes if current else (), data.get("attributes"))
        except JsonFieldError as exc:
            raise SystemError_(f"bad SubscriptionGroupConfig of group {raw_name}: {exc}") from None
        except (ValueError, TypeError, AttributeError):
            raise SystemError_(f"bad SubscriptionGroupConfig of group {raw_name}") from None
        config = dataclasses.replace(config, attributes=attributes)
        policy = config.attribute(EXPIRED_POLICY_ATTRIBUTE)
        if policy not in (None, POLICY_DROP, POLICY_DLQ):
            raise SystemError_(f"attribute {EXPIRED_POLICY_ATTRIBUTE}={policy!r} must be {POLICY_DROP} or {POLICY_DLQ}")
        if self.groups.put(config):
            self.groups_changed()
        return request.response(ResponseCode.SUCCESS)

    async def all_groups(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=jsonbody.dumps(self.groups.to_json()))

    async def delete_group(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        group = group_field(request, "groupName")
        if self.groups.delete(group):
            self.groups_changed()
        if boolean(request, "removeOffset"):
            self.offsets.remove_group(group)
            self.offsets_changed()
        return request.response(ResponseCode.SUCCESS)

    async def all_offsets(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=jsonbody.dumps_legacy(self.offsets.to_json()))

    async def consumed_by(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = topic_field(request)
        groups = set(self.consumers.groups_subscribing(topic)) | self.offsets.groups_of_topic(topic)
        return request.response(body=jsonbody.dumps({"groupList": sorted(groups)}))

    async def consume_stats(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """ConsumeStats: per queue the broker's max offset, the group's committed offset and its time."""
        group = group_field(request, "consumerGroup")
        only = optional_topic_field(request)
        topics = [only] if only else sorted(self.offsets.topics_of_group(group))
        table: dict[MessageQueue, OffsetWrapper] = {}
        info = self.consumers.get(group)
        for topic in topics:
            config = self.topics.get(topic)
            # As RocketMQ: while the group is online, a topic it no longer subscribes to is left out.
            if config is None or (info is not None and info.subscriptions and topic not in info.subscriptions):
                continue
            table.update(self._offset_rows(group, topic, config.write_queue_nums))
        stats = ConsumeStats(table, self.stats.consume_tps(group, topics))
        return request.response(body=jsonbody.dumps_legacy(stats.to_json()))

    def _offset_rows(self, group: str, topic: str, queues: int) -> dict[MessageQueue, OffsetWrapper]:
        """OffsetWrapper per queue: the broker's max offset, the group's committed offset and its time."""
        broker_name = self.live.value.broker_name
        rows: dict[MessageQueue, OffsetWrapper] = {}
        for queue_id in range(queues):
            broker_offset = max(self.store.get_max_offset_in_queue(topic, queue_id), 0)
            consumer_offset = max(self.offsets.query(group, topic, queue_id) or 0, 0)
            last = 0
            if consumer_offset > 0:
                last = max(self.store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1), 0)
            rows[MessageQueue(topic, broker_name, queue_id)] = OffsetWrapper(broker_offset, consumer_offset, last)
        return rows

    async def broker_consume_stats(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """ConsumeStatsList: every subscription group's ConsumeStats per topic it has offsets for.

        As in RocketMQ, `isOrder=true` keeps only ordered topics, and a topic the
        group's online consumers no longer subscribe to is left out.
        """
        only_order = boolean(request, "isOrder")
        stats_list: list[dict[str, object]] = []
        total_diff = 0
        for group in sorted(config.group_name for config in self.groups):
            info = self.consumers.get(group)
            per_topic: list[dict[str, object]] = []
            for topic in sorted(self.offsets.topics_of_group(group)):
                config = self.topics.get(topic)
                if config is None or (only_order and not config.order):
                    continue
                if info is not None and info.subscriptions and topic not in info.subscriptions:
                    continue
                rows = self._offset_rows(group, topic, config.write_queue_nums)
                total_diff += sum(w.broker_offset - w.consumer_offset for w in rows.values())
                per_topic.append(ConsumeStats(rows, self.stats.consume_tps(group, [topic])).to_json())
            stats_list.append({group: per_topic})
        body = {
            "brokerAddr": self.live.value.broker_addr,
            "consumeStatsList": stats_list,
            "totalDiff": total_diff,
        }
        return request.response(body=jsonbody.dumps_legacy(body))

    async def consume_time_span(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """QueryConsumeTimeSpanBody: per queue the first and last store times, the time of the
        group's last consumed message, and how long the next one has waited."""
        topic = topic_field(request)
        group = group_field(request, "group")
        config = self.topics.get(topic)
        if config is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"topic[{topic}] not exist")
        now = int(time.time() * 1000)
        spans: list[dict[str, object]] = []
        for queue_id in range(config.write_queue_nums):
            min_time = self.store.get_earliest_message_time(topic, queue_id)
            max_offset = self.store.get_max_offset_in_queue(topic, queue_id)
            max_time = self.store.get_message_store_timestamp(topic, queue_id, max_offset - 1)
            consumer_offset = self.offsets.query(group, topic, queue_id)
            consumer_offset = -1 if consumer_offset is None else consumer_offset
            consume_time = min_time
            if consumer_offset > 0:
                consume_time = self.store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
            delay = 0
            if consumer_offset < max_offset:
                next_time = self.store.get_message_store_timestamp(topic, queue_id, max(consumer_offset, 0))
                delay = now - next_time if next_time > 0 else 0
            spans.append({
                "consumeTimeStamp": consume_time,
                "delayTime": delay,
                "maxTimeStamp": max_time,
                "messageQueue": {"brokerName": self.live.value.broker_name, "queueId": queue_id, "topic": topic},
                "minTimeStamp": min_time,
            })
        return request.response(body=jsonbody.dumps({"consumeTimeSpanSet": spans}))

    async def reset_offset(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = topic_field(request)
        group = group_field(request, "group")
        timestamp = integer(request, "timestamp")
        force = boolean(request, "isForce", True)
        config = self.topics.get(topic)
        if config is None:
            raise SystemError_(f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}")
        if self.groups.get(group) is None and self.consumers.get(group) is None:
            raise SystemError_(f"THe consumer group <{group}> not exist")
        broker_name = self.live.value.broker_name
        table = jsonbody.ObjectKeyMap()
        flat = []
        for queue_id in range(config.write_queue_nums):
            if timestamp == -1:
                target = self.store.get_max_offset_in_queue(topic, queue_id)
            else:
                target = self.store.get_offset_in_queue_by_time(topic, queue_id, timestamp)
            target = max(target, 0)
            committed = self.offsets.query(group, topic, queue_id)
            if not force and committed is not None and committed <= target:
                target = committed
            self.offsets.commit(group, topic, queue_id, target)
            key = {"brokerName": broker_name, "queueId": queue_id, "topic": topic}
            table.append((key, target))
            flat.append({**key, "offset": target})
        self.offsets_changed()
        body = jsonbody.dumps_legacy({"offsetTable": table})
        push_body = body
        if request.language == LanguageCode.CPP:
            push_body = jsonbody.dumps({"offsetTable": flat})
        await self._push_reset(group, topic, timestamp, force, push_body)
        return request.response(body=body)

    async def _push_reset(self, group: str, topic: str, timestamp: int, force: bool, body: bytes) -> None:
        info = self.consumers.get(group)
        if info is None:
            return
        fields = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=force).to_ext_fields()
        sends = []
        for client in list(info.channels.values()):
            if client.version < MIN_RESET_VERSION:
                log.info("client %s is too old for a pushed offset reset", client.client_id)
                continue
            cmd = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, dict(fields), body, oneway=True)
            sends.append(client.channel.invoke_oneway(cmd))
        results = await asyncio.gather(*sends, return_exceptions=True)
        for result in results:
            if isinstance(result, ConnectError):
                log.info("offset reset push failed: %s", result)

    async def consumer_status(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """Ask each online client of the group (or only `clientAddr`, a client id) for its queue
        offsets with GET_CONSUMER_STATUS_FROM_CLIENT; answer GetConsumerStatusBody.consumerTable."""
        topic = topic_field(request)
        group = group_field(request, "group")
        only = optional_text(request, "clientAddr")
        info = self.consumers.get(group)
        if info is None or not info.channels:
            return request.response(ResponseCode.SYSTEM_ERROR, f"No Any Consumer online in the consumer group: [{group}]")
        fields = GetConsumerStatusRequestHeader(topic=topic, group=group, client_addr=only).to_ext_fields()
        per_client: dict[str, jsonbody.ObjectKeyMap] = {}
        for client in list(info.channels.values()):
            if client.version < MIN_RESET_VERSION:
                return request.response(
                    ResponseCode.SYSTEM_ERROR, f"the client does not support this feature. version={client.version}"
                )
            if only and only != client.client_id:
                continue
            ask = RemotingCommand.request(RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT, dict(fields))
            try:
                answer = await client.channel.invoke(ask, CLIENT_STATUS_TIMEOUT_S)
            except (ConnectError, RequestTimeout) as exc:
                log.info("consumer status from %s failed: %s", client.client_id, exc)
                continue
            if answer.code == ResponseCode.SUCCESS and answer.body:
                try:
                    doc = jsonbody.loads(answer.body_bytes())
                    queues = jsonbody.object_key_items(doc.get("messageQueueTable") if isinstance(doc, dict) else None)
                except (jsonbody.JsonBodyError, ValueError, TypeError) as exc:
                    log.info("consumer status from %s unreadable: %s", client.client_id, exc)
                    continue
                per_client[client.client_id] = jsonbody.ObjectKeyMap(queues)
            if only:
                break
        body = {"consumerTable": per_client, "messageQueueTable": jsonbody.ObjectKeyMap()}
        return request.response(body=jsonbody.dumps_legacy(body))

    async def clone_offsets(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """Copy srcGroup's committed offsets of `topic` (or of all its topics) to destGroup.

        Unless `offline`, topics the source group's online consumers no longer
        subscribe to are skipped, as RocketMQ does.
        """
        source = group_field(request, "srcGroup")
        dest = group_field(request, "destGroup")
        only = optional_topic_field(request)
        offline = boolean(request, "offline")
        info = self.consumers.get(source)
        topics = [only] if only else sorted(self.offsets.topics_of_group(source))
        for topic in topics:
            if self.topics.get(topic) is None:
                continue
            if not offline and info is not None and info.subscriptions and topic not in info.subscriptions:
                continue
            for queue_id, offset in self.offsets.queues(source, topic).items():
                self.offsets.commit(dest, topic, queue_id, offset)
        self.offsets_changed()
        return request.response(ResponseCode.SUCCESS)
