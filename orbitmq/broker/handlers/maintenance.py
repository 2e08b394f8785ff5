"""Store maintenance and inspection requests of RocketMQ's mqadmin (AdminBrokerProcessor, 4.9):

* CLEAN_EXPIRED_CONSUMEQUEUE (306, `cleanExpiredCQ`): destroy queues whose entries all point
  below the CommitLog's min offset.
* CLEAN_UNUSED_TOPIC (316, `cleanUnusedTopic`): destroy the queues of topics the topic table
  no longer holds (system topics are spared).
* DELETE_EXPIRED_COMMITLOG (329, `deleteExpiredCommitLog`): the next cleaning rounds delete
  CommitLog files past fileReservedTime as at deleteWhen; answered at once, as in RocketMQ.
* QUERY_CONSUME_QUEUE (321, `queryCq`): raw ConsumeQueue entries from an index.
* QUERY_CORRECTION_OFFSET (308): per queue, the least offset the topic's groups (minus
  `filterGroups`) committed, Long.MAX_VALUE where `compareGroup` is behind it.
* RESUME_CHECK_HALF_MESSAGE (323): put a half message back in RMQ_SYS_TRANS_HALF_TOPIC with
  its check count at 0, so the transaction check asks the producer again.

All answer SUCCESS with no remark, or SYSTEM_ERROR with RocketMQ's remark.
"""

from __future__ import annotations

import logging
from typing import Any

from orbitmq.broker.consumers import ConsumerRegistry
from orbitmq.broker.handlers.fields import Registry, integer, optional_text, text, topic_field
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.topics import TopicTable
from orbitmq.broker.transaction.messages import resumed_half
from orbitmq.common import jsonbody
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.common.record import decode_record
from orbitmq.errors import CorruptRecord
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.store.api import MessageStore

log = logging.getLogger(__name__)

LONG_MAX = (1 << 63) - 1
#: Most entries one QUERY_CONSUME_QUEUE answers (RocketMQ reads at most one mapped buffer).
MAX_QUERY_COUNT = 10_000
RESUME_FAILED = "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed."
RESUME_EXCEPTION = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."


class MaintenanceHandlers:
    def __init__(
        self, *, store: MessageStore, topics: TopicTable, offsets: ConsumerOffsetTable, consumers: ConsumerRegistry,
    ) -> None:
        self.store = store
        self.topics = topics
        self.offsets = offsets
        self.consumers = consumers

    def register(self, server: Registry) -> None:
        server.register(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, self.clean_expired_consume_queue)
        server.register(RequestCode.CLEAN_UNUSED_TOPIC, self.clean_unused_topic)
        server.register(RequestCode.DELETE_EXPIRED_COMMITLOG, self.delete_expired_commit_log)
        server.register(RequestCode.QUERY_CONSUME_QUEUE, self.query_consume_queue)
        server.register(RequestCode.QUERY_CORRECTION_OFFSET, self.query_correction_offset)
        server.register(RequestCode.RESUME_CHECK_HALF_MESSAGE, self.resume_check_half_message)

    async def clean_expired_consume_queue(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        log.warning("invoke cleanExpiredConsumeQueue start (from %s)", peer.addr)
        removed = self.store.clean_expired_consume_queues()
        log.warning("invoke cleanExpiredConsumeQueue end: %d queue(s) destroyed", removed)
        return request.response(ResponseCode.SUCCESS)

    async def clean_unused_topic(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        log.warning("invoke cleanUnusedTopic start (from %s)", peer.addr)
        removed = self.store.clean_unused_topics(self.topics.names())
        log.warning("invoke cleanUnusedTopic end: %d queue(s) destroyed", removed)
        return request.response(ResponseCode.SUCCESS)

    async def delete_expired_commit_log(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        log.warning("invoke deleteExpiredCommitLog (from %s)", peer.addr)
        self.store.delete_expired_files_manually()
        return request.response(ResponseCode.SUCCESS)

    async def query_consume_queue(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = text(request, "topic")
        queue_id = integer(request, "queueId")
        index = integer(request, "index")
        count = min(max(integer(request, "count"), 0), MAX_QUERY_COUNT)
        group = optional_text(request, "consumerGroup")
        entries = self.store.consume_queue_entries(topic, queue_id, index, count)
        if entries is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"{queue_id}@{topic} is not exist!")
        body: dict[str, Any] = {
            "maxQueueIndex": self.store.get_max_offset_in_queue(topic, queue_id),
            "minQueueIndex": self.store.get_min_offset_in_queue(topic, queue_id),
        }
        if group is not None:
            subscription = self.consumers.subscription(group, topic)
            if subscription is None:
                body["filterData"] = f"{group}@{topic} is not online!"
            else:
                body["subscriptionData"] = subscription.to_json()
                body["filterData"] = "null"  # JSON.toJSONString of no ConsumerFilterData (tag filtering)
        if not entries:
            response = request.response(ResponseCode.SUCCESS, f"Index {index} of {queue_id}@{topic} is not exist!")
            response.body = jsonbody.dumps_legacy(body)
            return response
        body["queueData"] = [
            {"eval": False, "physicOffset": phys, "physicSize": size, "tagsCode": tags_code}
            for phys, size, tags_code in entries
        ]
        response = request.response(ResponseCode.SUCCESS)
        response.body = jsonbody.dumps_legacy(body)
        return response

    async def query_correction_offset(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = topic_field(request)
        compare_group = text(request, "compareGroup")
        filtered = {g for g in (optional_text(request, "filterGroups") or "").split(",") if g}
        correction: dict[int, int] = {}
        for group in self.offsets.groups_of_topic(topic):
            if group in filtered:
                continue
            for queue_id, offset in self.offsets.queues(group, topic).items():
                known = correction.get(queue_id)
                correction[queue_id] = offset if known is None else min(known, offset)
        for queue_id, offset in self.offsets.queues(compare_group, topic).items():
            known = correction.get(queue_id)
            if known is not None:
                correction[queue_id] = LONG_MAX if known > offset else known
        response = request.response(ResponseCode.SUCCESS)
        response.body = jsonbody.dumps_legacy({"correctionOffsets": dict(sorted(correction.items()))})
        return response

    async def resume_check_half_message(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        msg_id = text(request, "msgId")
        try:
            offset = parse_offset_msg_id(msg_id).commit_log_offset
        except ValueError:
            return request.response(ResponseCode.SYSTEM_ERROR, RESUME_EXCEPTION)
        found = self.store.select_one_message_by_offset(offset)
        if found is None:
            return request.response(ResponseCode.SYSTEM_ERROR, RESUME_EXCEPTION)
        try:
            with found:
                half = decode_record(found.buffer)
        except CorruptRecord:
            return request.response(ResponseCode.SYSTEM_ERROR, RESUME_EXCEPTION)
        result = await self.store.put_message(resumed_half(half))
        if not result.status.is_stored:
            log.error("resumeCheckHalfMessage: %s: %s", RESUME_FAILED, result.remark)
            return request.response(ResponseCode.SYSTEM_ERROR, RESUME_FAILED)
        log.info("Put message back to RMQ_SYS_TRANS_HALF_TOPIC. real topic=%s", half.properties.get("REAL_TOPIC"))
        return request.response(ResponseCode.SUCCESS)
