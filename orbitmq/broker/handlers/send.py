"""SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320).

The checks run in RocketMQ's order (broker writable, topic name, forbidden
system topics, topic exists or is auto-created from its template, topic
writable, queue id, sizes), each answering RocketMQ's code with a remark.
Accepted messages get the CLUSTER property, the MULTI_TAGS sysflag when the
topic asks for it, the born host from the connection and the store host
the broker advertises; single sends drop WAIT from the stored copy.

Flow control: a send that waited longer than waitTimeMillsInSendQueue
before it could be handed to the store is answered SYSTEM_BUSY
"[TIMEOUT_CLEAN_QUEUE]...". The wait is measured from when the handler
started, which the transport does inline as the frame is decoded (it does
not stamp frames with their arrival time), to when the send passes the send
gate that bounds how many puts are in flight at once.
"""

from __future__ import annotations

import asyncio
import collections
import random
import time
from collections.abc import Awaitable, Callable

from orbitmq.broker.autocreate import AutoCreateLimiter
from orbitmq.broker.config import LiveConfig
from orbitmq.broker.diskstate import WriteHealth
from orbitmq.broker.handlers.fields import Registry, integer, optional_text, text
from orbitmq.broker.stats import BrokerStats
from orbitmq.broker.subscriptions import SubscriptionGroupConfig, SubscriptionGroupTable
from orbitmq.broker.timer.routing import refuse_waiting_batch
from orbitmq.broker.topics import MULTI_TAG, PERM_READ, PERM_WRITE, TopicConfig, TopicTable
from orbitmq.broker.transaction.messages import make_half
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExtBatch, MessageExtBrokerInner
from orbitmq.errors import (
    MessageIllegal,
    NoPermission,
    ServiceNotAvailable,
    SubscriptionGroupNotExist,
    SystemBusy,
    SystemError_,
    TopicNotExist,
)
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RPC_TYPE_RESPONSE, RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.store.api import MessageStore, PutMessageResult, PutMessageStatus
from orbitmq.store.config import BrokerRole

MULTI_TAGS_FLAG = 0x2
TRANSACTION_TYPE_MASK = 0x0C
TRANSACTION_PREPARED = 0x04

#: SendMessageRequestHeaderV2's one-letter keys (§3.1).
V2_KEYS: dict[str, str] = {
    "a": "producerGroup",
    "b": "topic",
    "c": "defaultTopic",
    "d": "defaultTopicQueueNums",
    "e": "queueId",
    "f": "sysFlag",
    "g": "bornTimestamp",
    "h": "flag",
    "i": "properties",
    "j": "reconsumeTimes",
    "k": "unitMode",
    "l": "maxReconsumeTimes",
    "m": "batch",
    "n": "bname",
}

_ILLEGAL_REMARK = (
    "the message is illegal, maybe msg body or properties length not matched. "
    "msg body length limit {body}, msg properties length limit 32k."
)
_NOT_AVAILABLE_REMARK = (
    "service not available now. It may be caused by one of the following reasons: "
    "the broker's disk is full, messages are put to the slave, message store has been shut down, etc."
)


def long_form(request: RemotingCommand) -> RemotingCommand:
    """A V2 request's letter keys rewritten to SendMessageRequestHeader names (in place)."""
    fields = request.ext_fields
    if fields and "b" in fields and "topic" not in fields:
        request.ext_fields = {V2_KEYS.get(k, k): v for k, v in fields.items()}
    return request


#: The fields the single-send hot path reads, in V2 letters and in long names (same order).
_V2_HOT = ("b", "e", "f", "g", "h", "i", "j")
_LONG_HOT = ("topic", "queueId", "sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes")


def _int_field(value: str | None, name: str, default: int | None = None) -> int:
    """`fields.integer` for a value already read: decimal, or `default` when absent or empty."""
    if not value:
        if default is not None:
            return default
        raise SystemError_(f"the custom field <{name}> is null")
    try:
        return int(value)
    except ValueError:
        raise SystemError_(f"the custom field <{name}> is not a number: {value!r}") from None


#: Statuses that mean "stored", with the code the client reads as a sent result.
_STORED_CODES = {
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
}


def status_response(request: RemotingCommand, result: PutMessageResult, max_body: int) -> RemotingCommand:
    """Map a put's status to RocketMQ's response code and remark (SendMessageProcessor's table)."""
    status = result.status
    if status is PutMessageStatus.PUT_OK:  # the hot path: no table lookups
        return request.response(ResponseCode.SUCCESS)
    if status in _STORED_CODES:
        return request.response(_STORED_CODES[status])
    if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
        return request.response(ResponseCode.MESSAGE_ILLEGAL, result.remark or _ILLEGAL_REMARK.format(body=max_body))
    if status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
        return request.response(ResponseCode.SERVICE_NOT_AVAILABLE, result.remark or _NOT_AVAILABLE_REMARK)
    if status is PutMessageStatus.CREATE_MAPEDFILE_FAILED:
        return request.response(
            ResponseCode.SYSTEM_ERROR, result.remark or "create mapped file failed, server is busy or broken."
        )
    if status is PutMessageStatus.OS_PAGECACHE_BUSY:
        return request.response(
            ResponseCode.SYSTEM_ERROR, result.remark or "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
        )
    return request.response(ResponseCode.SYSTEM_ERROR, result.remark or status.value)


class SendGate:
    """Bounds the puts in flight; a send that waits here too long is refused (fast failure).

    `try_enter` takes a slot without awaiting when one is free (the common
    case: no coroutine, no future); `enter` waits for one in arrival order.
    Every successful enter is paired with one `leave`. `async with gate`
    does both.
    """

    def __init__(self, max_in_flight: int = 1024) -> None:
        self.max_in_flight = max_in_flight
        self.in_flight = 0
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()

    def try_enter(self) -> bool:
        if self.in_flight < self.max_in_flight and not self._waiters:
            self.in_flight += 1
            return True
        return False

    async def enter(self) -> None:
        if self.try_enter():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter  # leave() hands its slot over: in_flight already counts us
        except BaseException:
            if waiter.done() and not waiter.cancelled():
                self.leave()  # the slot was handed to us as we were cancelled: pass it on
            else:
                self._waiters.remove(waiter)
            raise

    def leave(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)  # the slot moves to the waiter
                return
        self.in_flight -= 1

    async def __aenter__(self) -> None:
        await self.enter()

    async def __aexit__(self, *exc: object) -> None:
        self.leave()


class SendHandlers:
    def __init__(
        self,
        *,
        live: LiveConfig,
        topics: TopicTable,
        groups: SubscriptionGroupTable,
        store: MessageStore,
        topics_changed: Callable[[], None],
        groups_changed: Callable[[], None] | None = None,
        stats: BrokerStats | None = None,
        gate: SendGate | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        before_put: Callable[[MessageExtBrokerInner], None] | None = None,
        replica_wait: Callable[[int], Awaitable[PutMessageStatus]] | None = None,
        store_health: WriteHealth | None = None,
    ) -> None:
        #: Told when a put succeeds, so that the end of a full-disk episode is logged.
        self.store_health = store_health or WriteHealth("message store")
        #: SYNC_MASTER: waits until the slave holds the CommitLog up to the given end offset.
        self.replica_wait = replica_wait
        #: Rewrites a message that must wait (delay level, timer) before it is stored; may raise a BrokerError.
        self.before_put = before_put
        self.stats = stats
        self.live = live
        self.topics = topics
        self.groups = groups
        self.store = store
        self.topics_changed = topics_changed
        self.groups_changed = groups_changed
        self.gate = gate or SendGate()
        self.monotonic = monotonic
        #: autoCreateTopicMaxCount / autoCreateTopicPerMinute (broker/autocreate.py).
        self.auto_create = AutoCreateLimiter(monotonic)

    def register(self, server: Registry) -> None:
        server.register(RequestCode.SEND_MESSAGE, self.send_message)
        server.register(RequestCode.SEND_MESSAGE_V2, self.send_message)
        server.register(RequestCode.SEND_BATCH_MESSAGE, self.send_batch)

    # --- checks shared by single and batch sends ---------------------------------

    def _check_topic(self, request: RemotingCommand) -> tuple[str, TopicConfig, int]:
        """Validate broker, topic and queue of a long-form request; returns (topic, config, queue id)."""
        return self._check_topic_fields(request, text(request, "topic"), request.field("queueId"))

    def _refuse_on_slave(self) -> None:
        if self.live.value.store.broker_role is BrokerRole.SLAVE:
            raise ServiceNotAvailable("this broker is a slave and takes no messages; send to its master")

    async def _replicated(self, result: PutMessageResult, wait: str | None) -> PutMessageResult:
        """SYNC_MASTER: a stored put with WAIT not false is answered once the slave has its bytes."""
        ar = result.append_result
        if self.replica_wait is None or ar is None or not result.is_ok or wait == "false":
            return result
        status = await self.replica_wait(ar.wrote_offset + ar.wrote_bytes)
        if status is PutMessageStatus.PUT_OK:
            return result
        return PutMessageResult(status, ar, result.remark)

    def _check_topic_fields(
        self, request: RemotingCommand, topic: str, raw_queue_id: str | None
    ) -> tuple[str, TopicConfig, int]:
        """`_check_topic` for fields already read (from either key form)."""
        config = self.live.value
        if not config.broker_permission & PERM_WRITE:
            raise NoPermission(f"the broker[{config.advertised_ip}] sending message is forbidden")
        topic_config = self.topics.get(topic)
        if topic_config is None:
            # Names in the table were validated when they entered it; only new ones need the check.
            problem = names.validate_topic(topic)
            if problem:
                raise SystemError_(problem)
        if topic in names.NOT_ALLOWED_SEND_TOPICS:
            raise NoPermission(f"Sending message to topic[{topic}] is forbidden.")
        if topic_config is None:
            topic_config = self._auto_create(long_form(request), topic)
        if not topic_config.writable:
            raise NoPermission(f"the topic[{topic}] sending message is forbidden")
        queue_id = _int_field(raw_queue_id, "queueId")
        valid = max(topic_config.write_queue_nums, topic_config.read_queue_nums)
        if queue_id >= valid:
            raise SystemError_(
                f"request queueId[{queue_id}] is illegal, {topic_config} Producer: {long_form(request).field('producerGroup')}"
            )
        if queue_id < 0:
            queue_id = random.randrange(max(topic_config.write_queue_nums, 1))
        return topic, topic_config, queue_id

    def _auto_create(self, request: RemotingCommand, topic: str) -> TopicConfig:
        created: TopicConfig | None = None
        if names.is_retry_topic(topic):
            group = self._group(topic[len(names.RETRY_GROUP_TOPIC_PREFIX) :])
            if group is not None and group.retry_queue_nums > 0:
                created = self.topics.ensure(topic, group.retry_queue_nums, PERM_READ | PERM_WRITE)
        else:
            default_topic = optional_text(request, "defaultTopic", names.AUTO_CREATE_TOPIC_KEY_TOPIC) or ""
            queue_nums = integer(request, "defaultTopicQueueNums", 4)
            config = self.live.value
            refused = self.auto_create.refusal(
                topic, len(self.topics), config.auto_create_topic_max_count, config.auto_create_topic_per_minute
            )
            if refused is not None:
                raise refused
            created = self.topics.create_in_send(topic, default_topic, queue_nums, integer(request, "topicSysFlag", 0))
            if created is not None:
                self.auto_create.created()
        if created is None:
            raise TopicNotExist(f"topic[{topic}] not exist, apply first please!")
        self.topics_changed()
        return created

    def _group(self, name: str) -> SubscriptionGroupConfig | None:
        """The group's config, auto-created when the broker allows it."""
        known = name in self.groups
        config = self.groups.find_or_create(name)
        if config is not None and not known and self.groups_changed is not None:
            self.groups_changed()
        return config

    def _check_wait(self, started: float) -> None:
        """Refuse a send that waited longer than waitTimeMillsInSendQueue to pass the gate."""
        waited_ms = (self.monotonic() - started) * 1000
        limit = self.live.value.wait_time_mills_in_send_queue
        if waited_ms > limit:
            raise SystemBusy(
                f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
                f"period in queue: {int(waited_ms)}ms, size of queue: 0"
            )

    # --- single message -------------------------------------------------------------

    async def send_message(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        started = self.monotonic()
        fields = request.ext_fields or {}
        # The hot path reads the few fields it needs straight from either key form (V2's
        # letters or the long names) instead of rewriting the request's map first.
        keys = _V2_HOT if "b" in fields and "topic" not in fields else _LONG_HOT
        topic_value, raw_queue_id, raw_sys_flag, raw_born, raw_flag, properties_text, raw_reconsume = map(
            fields.get, keys
        )
        if not topic_value:
            raise SystemError_("the custom field <topic> is null")
        self._refuse_on_slave()
        topic, topic_config, queue_id = self._check_topic_fields(request, topic_value, raw_queue_id)
        config = self.live.value
        body = request.body_bytes()
        max_body = config.store.max_message_size
        if len(body) > max_body:
            raise MessageIllegal(f"message body size {len(body)} exceeds the limit {max_body} bytes")
        properties = mc.decode_properties(properties_text) if properties_text else {}
        reconsume_times = _int_field(raw_reconsume, "reconsumeTimes", 0)
        sys_flag = _int_field(raw_sys_flag, "sysFlag", 0)
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        if sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_PREPARED and config.reject_transaction_message:
            raise NoPermission(f"the broker[{config.advertised_ip}] sending transaction message is forbidden")
        if topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX):
            topic, queue_id = self._retry_or_dlq(long_form(request), topic, queue_id, reconsume_times, properties)
        wait = properties.pop(mc.WAIT_STORE_MSG_OK, None)
        properties[mc.CLUSTER] = config.broker_cluster_name
        msg = MessageExtBrokerInner(
            topic,
            body,
            _int_field(raw_flag, "flag", 0),
            properties,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=_int_field(raw_born, "bornTimestamp", 0),
            born_host=peer.addr,
            store_host=config.broker_addr,
            reconsume_times=reconsume_times,
            tags_code=tag_hash_code(properties.get(mc.TAGS)),
        )
        if self.before_put is not None:
            self.before_put(msg)
        if sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_PREPARED:
            make_half(msg)  # kept in RMQ_SYS_TRANS_HALF_TOPIC until END_TRANSACTION (§6.8)
        msg.refresh_properties_string()
        # A character encodes to at most 4 UTF-8 bytes: short strings need no encoding to be checked.
        if len(msg.properties_string) * 4 > mc.MAX_PROPERTIES_BYTES:
            size = len(msg.properties_string.encode())
            if size > mc.MAX_PROPERTIES_BYTES:
                raise MessageIllegal(f"message properties length {size} exceeds the limit 32767 bytes")
        if wait is not None:
            # The stored copy drops WAIT (as 4.9.7 does), but the store still honours its value.
            msg.properties[mc.WAIT_STORE_MSG_OK] = wait
        gate = self.gate
        if not gate.try_enter():
            await gate.enter()
        try:
            self._check_wait(started)
            result = await self.store.put_message(msg)
        finally:
            gate.leave()
        if self.replica_wait is not None:
            result = await self._replicated(result, wait)
        ar = result.append_result
        if result.status is PutMessageStatus.PUT_OK and ar is not None:
            # The hot path: no status table, the response built in one go.
            if self.store_health.failing:
                self.store_health.succeeded()
            if self.stats is not None:
                self.stats.record_put(1)
            return RemotingCommand(
                ResponseCode.SUCCESS,
                {
                    "msgId": ar.msg_id,
                    "queueId": str(queue_id),
                    "queueOffset": str(ar.logics_offset),
                    "MSG_REGION": config.region_id,
                    "TRACE_ON": "true" if config.trace_on else "false",
                },
                opaque=request.opaque,
                flag=RPC_TYPE_RESPONSE,
                serialize_type=request.serialize_type,
            )
        response = status_response(request, result, max_body)
        if result.is_ok and ar is not None:
            response.ext_fields = self._response_fields(ar.msg_id, queue_id, ar.logics_offset)
            if self.stats is not None:
                self.stats.record_put(1)
        return response

    def _retry_or_dlq(
        self, request: RemotingCommand, topic: str, queue_id: int, reconsume_times: int, properties: dict[str, str]
    ) -> tuple[str, int]:
        """Sends to %RETRY%<group>: check the group; divert to %DLQ%<group> when retries are used up."""
        group_name = topic[len(names.RETRY_GROUP_TOPIC_PREFIX) :]
        group = self._group(group_name)
        if group is None:
            raise SubscriptionGroupNotExist(f"subscription group not exist, {group_name}")
        max_times = group.retry_max_times
        if request.version >= 121 and request.field("maxReconsumeTimes"):
            max_times = integer(request, "maxReconsumeTimes")
        if reconsume_times < max_times:
            return topic, queue_id
        dlq = names.dlq_topic(group_name)
        if dlq not in self.topics:
            self.topics.ensure(dlq, 1, PERM_READ | PERM_WRITE)
            self.topics_changed()
        properties.setdefault(mc.RETRY_TOPIC, topic)
        return dlq, 0

    def _response_fields(self, msg_id: str, queue_id: int, queue_offset: int) -> dict[str, str]:
        config = self.live.value
        return {
            "msgId": msg_id,
            "queueId": str(queue_id),
            "queueOffset": str(queue_offset),
            "MSG_REGION": config.region_id,
            "TRACE_ON": "true" if config.trace_on else "false",
        }

    # --- batch ---------------------------------------------------------------------------

    async def send_batch(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        started = self.monotonic()
        long_form(request)
        topic_name = text(request, "topic")
        if len(topic_name) > names.TOPIC_MAX_LENGTH:
            raise MessageIllegal(f"message topic length too long {len(topic_name)}, max: {names.TOPIC_MAX_LENGTH}")
        if names.is_retry_topic(topic_name):
            raise MessageIllegal(f"batch request does not support retry group {topic_name}")
        self._refuse_on_slave()
        topic, topic_config, queue_id = self._check_topic(request)
        config = self.live.value
        body = request.body_bytes()
        if not body:
            raise MessageIllegal("batch body is empty")
        if len(body) > config.store.max_message_size:
            raise MessageIllegal(f"batch body size {len(body)} exceeds the limit {config.store.max_message_size} bytes")
        sys_flag = integer(request, "sysFlag", 0)
        if sys_flag & TRANSACTION_TYPE_MASK:
            raise MessageIllegal("batch message does not support transaction")
        properties = mc.decode_properties(request.field("properties") or "")
        if int(properties.get(mc.DELAY_TIME_LEVEL, "0") or 0) > 0:
            raise MessageIllegal("batch message does not support delay message")
        refuse_waiting_batch(properties)
        properties[mc.CLUSTER] = config.broker_cluster_name
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS_FLAG
        batch = MessageExtBatch(
            topic=topic,
            queue_id=queue_id,
            body=body,
            properties_string=mc.encode_properties(properties),
            sys_flag=sys_flag,
            born_timestamp=integer(request, "bornTimestamp", 0),
            born_host=peer.addr,
            store_host=config.broker_addr,
            reconsume_times=integer(request, "reconsumeTimes", 0),
            flag=integer(request, "flag", 0),
        )
        async with self.gate:
            self._check_wait(started)
            result = await self.store.put_messages(batch)
        if self.replica_wait is not None:
            result = await self._replicated(result, properties.get(mc.WAIT_STORE_MSG_OK))
        response = status_response(request, result, config.store.max_message_size)
        if result.is_ok and result.append_result is not None:
            if self.store_health.failing:
                self.store_health.succeeded()
            ar = result.append_result
            ids = ",".join(ar.msg_ids) if ar.msg_ids else ar.msg_id
            response.ext_fields = self._response_fields(ids, queue_id, ar.logics_offset)
            if self.stats is not None:
                self.stats.record_put(ar.msg_num)
        return response
