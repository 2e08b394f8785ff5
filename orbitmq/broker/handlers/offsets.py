"""Offset requests: QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET, GET_MAX_OFFSET,
GET_MIN_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME.
"""

from __future__ import annotations

from orbitmq.broker.handlers.fields import (
    Registry,
    group_field,
    integer,
    offset_value,
    queue_id_of,
    topic_field,
)
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.topics import TopicTable
from orbitmq.errors import TopicNotExist
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.store.api import MessageStore


class OffsetHandlers:
    def __init__(self, *, offsets: ConsumerOffsetTable, store: MessageStore, topics: TopicTable) -> None:
        self.offsets = offsets
        self.store = store
        self.topics = topics

    def register(self, server: Registry) -> None:
        server.register(RequestCode.QUERY_CONSUMER_OFFSET, self.query_consumer_offset)
        server.register(RequestCode.UPDATE_CONSUMER_OFFSET, self.update_consumer_offset)
        server.register(RequestCode.GET_MAX_OFFSET, self.max_offset)
        server.register(RequestCode.GET_MIN_OFFSET, self.min_offset)
        server.register(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, self.search_offset)
        server.register(RequestCode.GET_EARLIEST_MSG_STORETIME, self.earliest_time)

    async def query_consumer_offset(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """The stored offset; with none stored, 0 while the queue still starts at 0 (§3.3) and its
        message 0 is within accessMessageInMemoryMaxRatio of the CommitLog head, else QUERY_NOT_FOUND
        (ConsumerManageProcessor.queryConsumerOffset with checkInDiskByConsumeOffset), so that a new
        group on a topic with a long history starts where its consumeFromWhere says.
        """
        group = group_field(request, "consumerGroup")
        topic = topic_field(request)
        queue_id = integer(request, "queueId")
        offset = self.offsets.query(group, topic, queue_id)
        if offset is not None:
            return request.response(ext_fields={"offset": str(offset)})
        if self.store.get_min_offset_in_queue(topic, queue_id) <= 0 and not self.store.check_in_disk_by_consume_offset(
            topic, queue_id, 0
        ):
            return request.response(ext_fields={"offset": "0"})
        return request.response(ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")

    async def update_consumer_offset(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """Store a group's offset: only for a topic this broker has, one of its queues, an offset >= 0."""
        group = group_field(request, "consumerGroup")
        topic = topic_field(request)
        config = self.topics.get(topic)
        if config is None:
            raise TopicNotExist(f"Topic {topic} not exist!")
        queue_id = queue_id_of(
            integer(request, "queueId"), topic, max(config.read_queue_nums, config.write_queue_nums)
        )
        offset = offset_value(integer(request, "commitOffset"), "commitOffset")
        self.offsets.commit(group, topic, queue_id, offset)
        return request.response(ResponseCode.SUCCESS)

    async def max_offset(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        offset = self.store.get_max_offset_in_queue(topic_field(request), integer(request, "queueId"))
        return request.response(ext_fields={"offset": str(offset)})

    async def min_offset(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        offset = self.store.get_min_offset_in_queue(topic_field(request), integer(request, "queueId"))
        return request.response(ext_fields={"offset": str(offset)})

    async def search_offset(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        offset = self.store.get_offset_in_queue_by_time(
            topic_field(request), integer(request, "queueId"), integer(request, "timestamp")
        )
        return request.response(ext_fields={"offset": str(offset)})

    async def earliest_time(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        timestamp = self.store.get_earliest_message_time(topic_field(request), integer(request, "queueId"))
        return request.response(ext_fields={"timestamp": str(timestamp)})
