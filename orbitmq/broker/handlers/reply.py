"""SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325): replies of request-reply (§6.9).

A responder sends the reply to `<cluster>_REPLY_TOPIC`. The broker finds the
requester by the reply's REPLY_TO_CLIENT property among its producer
connections (requesters heartbeat before they send a request), stamps
PUSH_REPLY_TIME and pushes the reply to it with PUSH_REPLY_MESSAGE_TO_CLIENT
(326): a ReplyMessageRequestHeader (§3.12) and the body. With
storeReplyMessageEnable (default true) the reply is also stored like any
message. The responder learns whether the push reached the requester: a
missing or failing requester is answered SYSTEM_ERROR with a remark saying
so (the reply is stored all the same).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.handlers.fields import Registry, legal_topic
from orbitmq.broker.handlers.send import status_response
from orbitmq.broker.producers import ProducerRegistry
from orbitmq.broker.topics import PERM_WRITE, TopicTable
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.errors import MessageIllegal, NoPermission, RemotingError, SystemError_, TopicNotExist
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.headers import ReplyMessageRequestHeader, SendMessageRequestHeader, parse_send_header
from orbitmq.store.api import MessageStore

log = logging.getLogger("orbitmq.broker.reply")

#: How long the broker waits for the requester to acknowledge a pushed reply.
PUSH_TIMEOUT_S = 3.0


class ReplyHandlers:
    def __init__(
        self,
        *,
        live: LiveConfig,
        topics: TopicTable,
        producers: ProducerRegistry,
        store: MessageStore,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.live = live
        self.topics = topics
        self.producers = producers
        self.store = store
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))

    def register(self, server: Registry) -> None:
        server.register(RequestCode.SEND_REPLY_MESSAGE, self.send_reply)
        server.register(RequestCode.SEND_REPLY_MESSAGE_V2, self.send_reply)

    def _reply_message(
        self, header: SendMessageRequestHeader, request: RemotingCommand, peer: Peer
    ) -> MessageExtBrokerInner:
        config = self.live.value
        if not header.topic:
            raise SystemError_("the custom field <topic> is null")
        topic = legal_topic(header.topic)
        if not config.broker_permission & PERM_WRITE:
            raise NoPermission(f"the broker[{config.advertised_ip}] sending message is forbidden")
        topic_config = self.topics.get(topic)
        if topic_config is None:
            raise TopicNotExist(f"topic[{topic}] not exist, apply first please!")
        queue_id = header.queue_id
        if queue_id >= max(topic_config.write_queue_nums, topic_config.read_queue_nums):
            raise SystemError_(f"request queueId[{queue_id}] is illegal, {topic_config}")
        if queue_id < 0:
            queue_id = random.randrange(max(topic_config.write_queue_nums, 1))
        body = request.body_bytes()
        if len(body) > config.store.max_message_size:
            raise MessageIllegal(
                f"message body size {len(body)} exceeds the limit {config.store.max_message_size} bytes"
            )
        properties = mc.decode_properties(header.properties or "")
        properties[mc.CLUSTER] = config.broker_cluster_name
        return MessageExtBrokerInner(
            topic=topic,
            body=body,
            flag=header.flag,
            properties=properties,
            queue_id=queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=peer.addr,
            store_host=config.broker_addr,
            reconsume_times=header.reconsume_times or 0,
            tags_code=tag_hash_code(properties.get(mc.TAGS)),
        )

    async def send_reply(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        header = parse_send_header(request)
        msg = self._reply_message(header, request, peer)
        pushed, remark = await self._push(header, msg)
        msg.properties.pop(mc.WAIT_STORE_MSG_OK, None)
        msg.refresh_properties_string()
        fields = {"queueId": str(msg.queue_id)}
        config = self.live.value
        if config.store_reply_message_enable:
            result = await self.store.put_message(msg)
            response = status_response(request, result, config.store.max_message_size)
            if result.is_ok and result.append_result is not None:
                fields.update(msgId=result.append_result.msg_id, queueOffset=str(result.append_result.logics_offset))
            elif pushed:
                log.warning("reply %s pushed but not stored: %s", msg.unique_key, result.status.value)
                response = request.response(ResponseCode.SUCCESS)
        else:
            response = request.response(ResponseCode.SUCCESS)
        if not pushed:
            response = request.response(ResponseCode.SYSTEM_ERROR, remark)
        fields.update(MSG_REGION=config.region_id, TRACE_ON="true" if config.trace_on else "false")
        response.ext_fields = fields
        return response

    async def _push(self, header: SendMessageRequestHeader, msg: MessageExtBrokerInner) -> tuple[bool, str]:
        """PUSH_REPLY_MESSAGE_TO_CLIENT to the requester; (delivered, remark when not)."""
        client_id = msg.properties.get(mc.MESSAGE_REPLY_TO_CLIENT)
        if not client_id:
            return False, f"the reply message lacks the {mc.MESSAGE_REPLY_TO_CLIENT} property"
        requester = self.producers.find_by_client_id(client_id)
        if requester is None or requester.channel.closed:
            return False, f"push reply message fail, channel of <{client_id}> not found."
        msg.properties[mc.PUSH_REPLY_TIME] = str(self.clock_ms())
        msg.refresh_properties_string()
        config = self.live.value
        fields = ReplyMessageRequestHeader(
            producer_group=header.producer_group or "",
            topic=msg.topic,
            default_topic=header.default_topic or names.AUTO_CREATE_TOPIC_KEY_TOPIC,
            default_topic_queue_nums=header.default_topic_queue_nums,
            queue_id=msg.queue_id,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            flag=msg.flag,
            properties=msg.properties_string,
            reconsume_times=msg.reconsume_times,
            born_host=msg.born_host,
            store_host=config.broker_addr,
            store_timestamp=self.clock_ms(),
        ).to_ext_fields()
        push = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, fields, msg.body)
        try:
            answer = await requester.channel.invoke(push, PUSH_TIMEOUT_S)
        except RemotingError as exc:
            return False, f"push reply message to {client_id} failed: {exc}"
        if answer.code != ResponseCode.SUCCESS:
            return False, f"push reply message to {client_id} returned {answer.code}: {answer.remark or ''}"
        return True, ""
