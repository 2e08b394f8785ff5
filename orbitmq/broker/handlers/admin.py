"""Topic and broker administration: UPDATE_AND_CREATE_TOPIC, DELETE_TOPIC_IN_BROKER,
GET_ALL_TOPIC_CONFIG, GET_TOPIC_NAME_LIST, GET_SYSTEM_TOPIC_LIST_FROM_BROKER,
GET_TOPIC_STATS_INFO, GET_BROKER_RUNTIME_INFO, GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG (which also
rewrites the broker's -c file with every key, as RocketMQ's Configuration.persist does).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.handlers.fields import (
    Registry,
    boolean,
    integer,
    optional_text,
    text,
    topic_field,
)
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.putstats import topic_put_stats
from orbitmq.broker.stats import BrokerStats
from orbitmq.broker.topics import MULTI_TAG, SINGLE_TAG, TopicConfig, TopicTable
from orbitmq.common import jsonbody, names
from orbitmq.common.javaprops import format_properties, parse_properties
from orbitmq.common.keycatalog import BROKER_KEYS
from orbitmq.common.topic_config import merge_attributes
from orbitmq.errors import ConfigError, SystemError_
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import PROTOCOL_VERSION, RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.headers import GetBrokerConfigResponseHeader
from orbitmq.store.api import MessageStore
from orbitmq.store.config_file import write_atomically

log = logging.getLogger(__name__)

#: Most queues one topic may have on a broker; guards against a typo creating millions of files.
MAX_QUEUE_NUMS = 1024
BROKER_VERSION_DESC = "V4_9_7"
#: The BrokerStatsManager statistics VIEW_BROKER_STATS_DATA can answer.
TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


class AdminHandlers:
    def __init__(
        self,
        *,
        live: LiveConfig,
        topics: TopicTable,
        offsets: ConsumerOffsetTable,
        store: MessageStore,
        stats: BrokerStats,
        topics_changed: Callable[[], None],
        config_changed: Callable[[], None],
        topics_registered: Callable[[], Awaitable[None]],
    ) -> None:
        self.live = live
        self.topics = topics
        self.offsets = offsets
        self.store = store
        self.stats = stats
        self.topics_changed = topics_changed
        self.config_changed = config_changed
        #: One UPDATE_BROKER_CONFIG at a time, so the config file ends with the last one's state.
        self._update_lock = asyncio.Lock()
        #: Records a topic change and registers it with the NameServers, returning once they answered.
        self.topics_registered = topics_registered

    def register(self, server: Registry) -> None:
        server.register(RequestCode.UPDATE_AND_CREATE_TOPIC, self.create_topic)
        server.register(RequestCode.DELETE_TOPIC_IN_BROKER, self.delete_topic)
        server.register(RequestCode.GET_ALL_TOPIC_CONFIG, self.all_topic_config)
        server.register(RequestCode.GET_TOPIC_NAME_LIST, self.topic_names)
        server.register(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER, self.system_topics)
        server.register(RequestCode.GET_TOPIC_STATS_INFO, self.topic_stats)
        server.register(RequestCode.GET_BROKER_RUNTIME_INFO, self.runtime_info)
        server.register(RequestCode.GET_BROKER_CONFIG, self.get_config)
        server.register(RequestCode.VIEW_BROKER_STATS_DATA, self.stats_data)
        server.register(RequestCode.UPDATE_BROKER_CONFIG, self.update_config)

    # --- topics -------------------------------------------------------------------

    async def create_topic(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = topic_field(request)
        if names.is_system_topic(topic) or topic == self.live.value.broker_cluster_name:
            raise SystemError_(names.system_topic_conflict_remark(topic))
        read = integer(request, "readQueueNums")
        write = integer(request, "writeQueueNums")
        for label, value in (("readQueueNums", read), ("writeQueueNums", write)):
            if not 0 < value <= MAX_QUEUE_NUMS:
                raise SystemError_(f"{label} {value} must be in 1..{MAX_QUEUE_NUMS}")
        filter_type = optional_text(request, "topicFilterType", SINGLE_TAG) or SINGLE_TAG
        if filter_type not in (SINGLE_TAG, MULTI_TAG):
            raise SystemError_(f"topicFilterType {filter_type!r} is not SINGLE_TAG or MULTI_TAG")
        existing = self.topics.get(topic)
        attributes = existing.attributes if existing is not None else ()
        spec = request.field("attributes")
        if spec:
            try:
                attributes = merge_attributes(attributes, spec)
            except ValueError as exc:
                raise SystemError_(str(exc)) from None
        config = TopicConfig(
            topic,
            read,
            write,
            integer(request, "perm", names.DEFAULT_PERM) & 0xF,
            filter_type,
            integer(request, "topicSysFlag", 0),
            boolean(request, "order"),
            attributes,
        )
        if self.topics.put(config):
            # Registered before the answer, as RocketMQ's registerIncrementBrokerData: whoever created
            # the topic can look its route up as soon as this returns.
            await self.topics_registered()
        return request.response(ResponseCode.SUCCESS)


    async def delete_topic(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = topic_field(request)
        if names.is_system_topic(topic):
            raise SystemError_(f"The topic[{topic}] is a system topic and cannot be deleted.")
        if self.topics.delete(topic):
            self.topics_changed()
        self.offsets.remove_topic(topic)
        self.store.delete_topics([topic])
        return request.response(ResponseCode.SUCCESS)

    async def all_topic_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        return request.response(body=jsonbody.dumps(self.topics.to_json()))

    async def topic_names(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        body = {"topicList": sorted(self.topics.names()), "brokerAddr": self.live.value.broker_addr}
        return request.response(body=jsonbody.dumps(body))

    async def system_topics(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        config = self.live.value
        system = [
            t for t in self.topics.names()
            if names.is_system_topic(t) or t in (config.broker_cluster_name, config.broker_name)
            or t == names.reply_topic(config.broker_cluster_name)
        ]
        return request.response(body=jsonbody.dumps({"topicList": sorted(system), "brokerAddr": config.broker_addr}))

    async def topic_stats(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = topic_field(request)
        config = self.topics.get(topic)
        if config is None:
            return request.response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        table = jsonbody.ObjectKeyMap()
        broker_name = self.live.value.broker_name
        for queue_id in range(config.write_queue_nums):
            max_offset = max(self.store.get_max_offset_in_queue(topic, queue_id), 0)
            min_offset = max(self.store.get_min_offset_in_queue(topic, queue_id), 0)
            last = 0
            if max_offset > 0:
                last = max(self.store.get_message_store_timestamp(topic, queue_id, max_offset - 1), 0)
            key = {"brokerName": broker_name, "queueId": queue_id, "topic": topic}
            table.append((key, {"lastUpdateTimestamp": last, "maxOffset": max_offset, "minOffset": min_offset}))
        return request.response(body=jsonbody.dumps_legacy({"offsetTable": table}))

    # --- broker -------------------------------------------------------------------

    async def runtime_info(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        self.stats.sample()
        figures: dict[str, str] = {
            "brokerVersionDesc": BROKER_VERSION_DESC,
            "brokerVersion": str(PROTOCOL_VERSION),
            "commitLogMaxOffset": str(self.store.get_max_phy_offset()),
            "commitLogMinOffset": str(self.store.get_min_phy_offset()),
            "sendThreadPoolQueueSize": "0",
            "pullThreadPoolQueueSize": "0",
            "queryThreadPoolQueueSize": "0",
            # mqadmin clusterList prints these three per broker; requests run on the event
            # loop (no executor queue to wait in) and no lock guards the page cache.
            "sendThreadPoolQueueHeadWaitTimeMills": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "pageCacheLockTimeMills": "0",
        }
        figures.update(self.stats.runtime_figures())
        figures.update({str(k): str(v) for k, v in self.store.runtime_info().items()})
        return request.response(body=jsonbody.dumps({"table": figures}))

    async def stats_data(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """BrokerStatsData for TOPIC_PUT_NUMS (see putstats) and GROUP_GET_NUMS (key
        "topic@group", from the pull counters); other statistics are not kept."""
        name = text(request, "statsName")
        key = text(request, "statsKey")
        body: dict[str, Any] | None = None
        if name == TOPIC_PUT_NUMS:
            config = self.topics.get(key)
            if config is not None:
                body = topic_put_stats(self.store, key, config.write_queue_nums, int(time.time() * 1000))
        elif name == GROUP_GET_NUMS:
            topic, _, group = key.partition("@")
            body = self.stats.group_get_windows(group, topic)
        if body is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"The stats <{name}> <{key}> not exist")
        return request.response(body=jsonbody.dumps(body))

    async def get_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        props = self.live.value.to_properties()
        response = request.response(body=format_properties(props).encode())
        version = jsonbody.dumps(self.topics.data_version.to_json()).decode()
        response.ext_fields = GetBrokerConfigResponseHeader(version=version).to_ext_fields()
        return response

    async def update_config(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """UPDATE_BROKER_CONFIG: apply what may change while running, then rewrite the config file."""
        async with self._update_lock:
            return await self._update_config(request)

    async def _update_config(self, request: RemotingCommand) -> RemotingCommand:
        body = request.body_bytes()
        if not body:
            raise SystemError_("string2Properties error: empty body")
        try:
            props = parse_properties(body.decode("utf-8"))
            updated = self.live.value.with_properties(props)
        except UnicodeDecodeError:
            raise SystemError_("update broker config failed: the body is not UTF-8") from None
        except ConfigError as exc:
            raise SystemError_(f"update broker config failed: {exc}") from None
        store_update = getattr(self.store, "update_config", None)
        if updated.store != self.live.value.store and callable(store_update):
            store_update(updated.store)  # with_properties let only store.config.RUNTIME_FIELDS change
        self.live.value = updated
        self.config_changed()
        for key in props:
            spec = BROKER_KEYS.get(key)
            if spec is not None and spec.ignored:
                log.warning("config key %s was updated but has no effect in OrbitMQ: %s", key, spec.ignored)
        if updated.config_file:
            # RocketMQ's Configuration.persist: the whole configuration replaces the -c file.
            text = format_properties(updated.file_properties())
            try:
                await asyncio.to_thread(write_atomically, updated.config_file, text)
            except OSError as exc:
                raise SystemError_(
                    f"the new config is in effect but could not be written to {updated.config_file}: "
                    f"{exc.strerror or exc}"
                ) from None
        return request.response(ResponseCode.SUCCESS)
