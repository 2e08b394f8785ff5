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
import struct
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from orbitmq.broker.autocreate import AutoCreateLimiter
from orbitmq.broker.config import LiveConfig
from orbitmq.broker.dedup import Key, SendDeduplicator, Stored, batch_ids, id_key, stored_items
from orbitmq.broker.diskstate import WriteHealth
from orbitmq.broker.expiry import TOPIC_TTL_ATTRIBUTE, message_ttl
from orbitmq.broker.handlers.fields import Registry, integer
from orbitmq.broker.pop.records import REVIVE_TOPIC_PREFIX
from orbitmq.broker.stats import BrokerStats
from orbitmq.broker.subscriptions import SubscriptionGroupConfig, SubscriptionGroupTable
from orbitmq.broker.timer.props import TIMER_DEL_UNIQKEY, TIMER_OUT_MS, TIMER_TOPIC
from orbitmq.broker.timer.routing import refuse_waiting_batch
from orbitmq.broker.topics import MULTI_TAG, PERM_READ, PERM_WRITE, TopicConfig, TopicTable
from orbitmq.broker.transaction.messages import make_half
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExtBatch, MessageExtBrokerInner, waits_for_store
from orbitmq.common.msgid import create_offset_msg_id
from orbitmq.common.recall import build_recall_handle
from orbitmq.common.record import record_size
from orbitmq.common.sysflag import MULTI_TAGS, TRANSACTION_PREPARED_TYPE, TRANSACTION_TYPE_MASK
from orbitmq.common.topic_config import merge_attributes
from orbitmq.errors import (
    HeaderError,
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
from orbitmq.remoting.header_base import parse_int
from orbitmq.remoting.headers import SendMessageRequestHeader, SendMessageResponseHeader, parse_send_header
from orbitmq.store.api import MessageStore, PutMessageResult, PutMessageStatus
from orbitmq.store.config import BrokerRole

_ILLEGAL_REMARK = (
    "the message is illegal, maybe msg body or properties length not matched. "
    "msg body length limit {body}, msg properties length limit 32k."
)
_NOT_AVAILABLE_REMARK = (
    "service not available now. It may be caused by one of the following reasons: "
    "the broker's disk is full, messages are put to the slave, message store has been shut down, etc."
)


def _delay_level(properties: dict[str, str]) -> int:
    """The DELAY property as Java reads it (Integer.parseInt); a malformed one is refused with a remark."""
    raw = properties.get(mc.DELAY_TIME_LEVEL)
    if not raw:
        return 0
    try:
        return parse_int(raw, mc.DELAY_TIME_LEVEL)
    except HeaderError:
        raise MessageIllegal(f"the property {mc.DELAY_TIME_LEVEL} must be a 32-bit integer, got {raw!r}"
        ) from None


_ITEM_SIZE = struct.Struct(">i")
#: A batch item's bytes besides its body and properties: TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODY length,
#: PROPERTIES length (§5.8).
BATCH_ITEM_OVERHEAD = 22


def check_batch_count(body: bytes, topic: str, extra_properties: int, max_record: int) -> None:
    """Refuse a batch whose items could not all be stored, before any item is parsed.

    Every item becomes a record of at least `record_size(0, topic, 0)` bytes plus
    the batch's own properties, and the records together must fit in
    `max_record` bytes (the store's limit, as Java's for a batch). The item
    count that allows is known from the body length alone; only the item sizes
    are walked, and only up to that count.
    """
    per_item = record_size(0, len(topic.encode()), extra_properties) - BATCH_ITEM_OVERHEAD
    end = len(body)
    limit = max(max_record - end, 0) // per_item
    if end // BATCH_ITEM_OVERHEAD <= limit:
        return  # even items of nothing but their sizes could not be too many: no walk (every real batch)
    unpack = _ITEM_SIZE.unpack_from
    pos = count = 0
    while pos < end:
        count += 1
        if count > limit:
            raise MessageIllegal(f"the batch holds more than {limit} messages: stored, {len(body)} bytes of items "
                f"would exceed the limit of {max_record} bytes",
            )
        if end - pos < BATCH_ITEM_OVERHEAD:
            break  # a truncated item: the store refuses the body with its own remark
        (size,) = unpack(body, pos)
        if size < BATCH_ITEM_OVERHEAD:
            break
        pos += size


#: Statuses that mean "stored", with the code the client reads as a sent result.
_STORED_CODES = {
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
}


def _message_type(sys_flag: int, stored_topic: str, topic: str) -> str:
    """rocketmq_messages_in_total's message_type: a half message, one the delay or timer
    routing moved to its own topic, or a plain one."""
    if sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_PREPARED_TYPE:
        return "transaction"
    return "delay" if stored_topic != topic else "normal"


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
    if status is PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH:
        return request.response(
            ResponseCode.SYSTEM_ERROR, result.remark or "in-sync replicas not enough: fewer copies than minInSyncReplicas"
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

    @property
    def waiting(self) -> int:
        """How many sends wait for a slot."""
        return len(self._waiters)

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


def _add_recall_handle(fields: dict[str, str], msg: MessageExtBrokerInner, broker_name: str) -> None:
    """A timer send answers RocketMQ 5.3's `recallHandle` (RECALL_MESSAGE takes it back)."""
    props = msg.properties
    real = props.get(mc.REAL_TOPIC)
    uniq = props.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    out_ms = props.get(TIMER_OUT_MS)
    if (
        real and uniq and out_ms and out_ms.isdigit() and TIMER_DEL_UNIQKEY not in props
        and not real.startswith(names.RETRY_GROUP_TOPIC_PREFIX)
    ):
        fields["recallHandle"] = build_recall_handle(real, broker_name, int(out_ms), uniq)


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
        dedup: SendDeduplicator | None = None,
        may_write: Callable[[], bool] | None = None,
        put_refusal: Callable[[], PutMessageResult | None] | None = None,
    ) -> None:
        #: Controller mode: minInSyncReplicas, asked right before a put that waits for replicas is
        #: appended; a refusal is the answer and nothing is stored (RocketMQ 5's CommitLog order).
        self.put_refusal = put_refusal
        #: Controller mode (orbitmq/failover): False while this master's lease is not confirmed
        #: (fencing) or it hands its role over; sends are then answered SERVICE_NOT_AVAILABLE.
        self.may_write = may_write
        #: The duplicate window of idempotent sends (broker/dedup.py); None: no topic has one.
        self.dedup = dedup
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

    def _refuse_on_slave(self) -> None:
        if self.live.value.store.broker_role is BrokerRole.SLAVE:
            raise ServiceNotAvailable("this broker is a slave and takes no messages; send to its master"
            )
        if self.may_write is not None and not self.may_write():
            raise ServiceNotAvailable("this broker is not a confirmed master of its group now (failover under "
                                      "way); send again after the route updates")

    async def _replicated(self, result: PutMessageResult, waits: bool) -> PutMessageResult:
        """SYNC_MASTER: a stored put whose producer waits (WAIT) is answered once the slave has its bytes."""
        ar = result.append_result
        if self.replica_wait is None or ar is None or not result.is_ok or not waits:
            return result
        status = await self.replica_wait(ar.wrote_offset + ar.wrote_bytes)
        if status is PutMessageStatus.PUT_OK:
            return result
        return PutMessageResult(status, ar, result.remark)

    def _check_topic(self, request: RemotingCommand, header: SendMessageRequestHeader) -> tuple[str, TopicConfig, int]:
        """Validate broker, topic and queue of a send; returns (topic, config, queue id)."""
        topic = header.topic
        if not topic:
            raise SystemError_("the custom field <topic> is null")
        config = self.live.value
        if not config.broker_permission & PERM_WRITE:
            raise NoPermission(f"the broker[{config.advertised_ip}] sending message is forbidden"
            )
        topic_config = self.topics.get(topic)
        if topic_config is None:
            # Names in the table were validated when they entered it; only new ones need the check.
            problem = names.validate_topic(topic)
            if problem:
                raise SystemError_(problem)
        if topic in names.NOT_ALLOWED_SEND_TOPICS or topic.startswith(REVIVE_TOPIC_PREFIX):
            # The revive topic holds POP checkpoints: a forged one would re-put any message (broker/pop/).
            raise NoPermission(f"Sending message to topic[{topic}] is forbidden.")
        if topic_config is None:
            topic_config = self._auto_create(request, header)
        if not topic_config.writable:
            raise NoPermission(f"the topic[{topic}] sending message is forbidden")
        queue_id = header.queue_id
        valid = max(topic_config.write_queue_nums, topic_config.read_queue_nums)
        if queue_id >= valid:
            raise SystemError_(f"request queueId[{queue_id}] is illegal, {topic_config} Producer: {header.producer_group}",
            )
        if queue_id < 0:
            queue_id = random.randrange(max(topic_config.write_queue_nums, 1))
        return topic, topic_config, queue_id

    def _auto_create(self, request: RemotingCommand, header: SendMessageRequestHeader) -> TopicConfig:
        topic = header.topic
        created: TopicConfig | None = None
        if names.is_retry_topic(topic):
            group = self._group(topic[len(names.RETRY_GROUP_TOPIC_PREFIX) :])
            if group is not None and group.retry_queue_nums > 0:
                created = self.topics.ensure(topic, group.retry_queue_nums, PERM_READ | PERM_WRITE)
        else:
            default_topic = header.default_topic or names.AUTO_CREATE_TOPIC_KEY_TOPIC
            config = self.live.value
            if (default_topic == names.AUTO_CREATE_TOPIC_KEY_TOPIC and not config.auto_create_topic_enable
                    and self.topics.disable_auto_create()):
                self.topics_changed()
            refused = self.auto_create.refusal(
                topic, len(self.topics), config.auto_create_topic_max_count, config.auto_create_topic_per_minute
            )
            if refused is not None:
                raise refused
            topic_sys_flag = integer(request, "topicSysFlag", 0)  # not a send header field; read as sent
            created = self.topics.create_in_send(topic, default_topic, header.default_topic_queue_nums, topic_sys_flag)
            if created is not None:
                self.auto_create.created()
        if created is None:
            raise TopicNotExist(f"topic[{topic}] not exist, apply first please!",
            )
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
        config = self.live.value
        limit = config.wait_time_mills_in_send_queue
        if waited_ms > limit and config.broker_fast_failure_enable:
            raise SystemBusy(f"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, "
                f"period in queue: {int(waited_ms)}ms, size of queue: 0",
            )

    # --- single message -------------------------------------------------------------

    async def send_message(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        started = self.monotonic()
        header = parse_send_header(request)
        self._refuse_on_slave()
        topic, topic_config, queue_id = self._check_topic(request, header)
        config = self.live.value
        body = request.body_bytes()
        max_body = config.store.max_message_size
        if len(body) > max_body:
            raise MessageIllegal(f"message body size {len(body)} exceeds the limit {max_body} bytes"
            )
        # The properties are decoded here once, to the map the broker edits, and encoded once below;
        # the store checks the encoded size (one check) and writes those bytes.
        properties = mc.decode_properties(header.properties) if header.properties else {}
        if mc.TTL_MS in properties:
            topic_config = self._expiring(topic_config, properties)
        reconsume_times = header.reconsume_times or 0
        sys_flag = header.sys_flag
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS
        prepared = sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_PREPARED_TYPE
        if prepared and config.reject_transaction_message:
            raise NoPermission(f"the broker[{config.advertised_ip}] sending transaction message is forbidden",
            )
        if topic.startswith(names.RETRY_GROUP_TOPIC_PREFIX):
            topic, queue_id = self._retry_or_dlq(request, header, topic, queue_id, reconsume_times, properties)
        # WAIT is the producer's instruction, not part of the stored message (4.9.7 drops it too).
        wait = properties.pop(mc.WAIT_STORE_MSG_OK, None)
        waits = wait == "true" or waits_for_store(wait)  # what producers send, decided without a call
        properties[mc.CLUSTER] = config.broker_cluster_name
        msg = MessageExtBrokerInner(
            topic,
            body,
            header.flag,
            properties,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=peer.addr,
            store_host=config.broker_addr,
            reconsume_times=reconsume_times,
            tags_code=tag_hash_code(properties.get(mc.TAGS)),
            wait_store=waits,
        )
        if self.before_put is not None:
            self.before_put(msg)
        if prepared:
            make_half(msg)  # kept in RMQ_SYS_TRANS_HALF_TOPIC until END_TRANSACTION (§6.8)
        msg.refresh_properties_string()
        claimed: tuple[str, Key, int] | None = None
        if self.dedup is not None and (config.duplicate_detection_window_seconds or topic_config.attributes):
            # Idempotent sends (broker/dedup.py): an id stored within the topic's window is answered, not stored.
            window = self.dedup.window_ms(topic_config)
            uniq = properties.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
            if window and uniq and msg.topic == topic:  # not one that waits (delay, timer, half)
                claimed = (topic, id_key(uniq), window)
                earlier = self.dedup.claim_now(*claimed)
                if earlier is not None and not isinstance(earlier, Stored):
                    earlier = await self.dedup.claim(*claimed)  # its first put is in flight: wait for it
                if earlier is not None:
                    return self._earlier_response(request, [earlier])
        gate = self.gate
        try:
            if not gate.try_enter():
                await gate.enter()
            try:
                self._check_wait(started)
                refused = self.put_refusal() if self.put_refusal is not None and waits else None
                result = refused or await self.store.put_message(msg)
            finally:
                gate.leave()
        except BaseException:
            if claimed is not None:  # not stored: a retry of this id waiting for the put stores it
                self._settle(claimed, None, queue_id)
            raise
        if claimed is not None:
            self._settle(claimed, result, queue_id)
        if self.replica_wait is not None:
            result = await self._replicated(result, waits)
        ar = result.append_result
        if result.status is PutMessageStatus.PUT_OK and ar is not None:
            # The hot path: no status table, the response built in one go (SendMessageResponseHeader's
            # fields, written inline: half a microsecond less than the typed header per send).
            if self.store_health.failing:
                self.store_health.succeeded()
            if self.stats is not None:
                stored = msg.topic
                self.stats.record_put(
                    1, stored, len(body), "normal" if stored is topic else _message_type(sys_flag, stored, topic)
                )
            fields_out = {
                "msgId": ar.msg_id,
                "queueId": str(queue_id),
                "queueOffset": str(ar.logics_offset),
                "MSG_REGION": config.region_id,
                "TRACE_ON": "true" if config.trace_on else "false",
            }
            if msg.topic == TIMER_TOPIC:
                _add_recall_handle(fields_out, msg, config.broker_name)
            return RemotingCommand(
                ResponseCode.SUCCESS,
                fields_out,
                opaque=request.opaque,
                flag=RPC_TYPE_RESPONSE,
                serialize_type=request.serialize_type,
            )
        response = status_response(request, result, max_body)
        if result.is_ok and ar is not None:
            response.ext_fields = self._response_fields(ar.msg_id, queue_id, ar.logics_offset)
            if msg.topic == TIMER_TOPIC:
                _add_recall_handle(response.ext_fields, msg, config.broker_name)
            if self.stats is not None:
                self.stats.record_put(1, msg.topic, len(body), _message_type(sys_flag, msg.topic, topic))
        return response

    def _expiring(self, topic_config: TopicConfig, properties: dict[str, str]) -> TopicConfig:
        """A message with a TTL: checked, and its topic marked for pull-time TTL checks (broker/expiry.py)."""
        message_ttl(properties)  # a malformed TTL raises MessageIllegal
        if topic_config.attribute(TOPIC_TTL_ATTRIBUTE) is not None:
            return topic_config
        marked = replace(
            topic_config,
            attributes=merge_attributes(topic_config.attributes, f"+{TOPIC_TTL_ATTRIBUTE}=0"),
        )
        self.topics.put(marked)
        self.topics_changed()
        return marked
    def _settle(self, claimed: tuple[str, Key, int], result: PutMessageResult | None, queue_id: int) -> None:
        """End the claim of a single send's id: where the put stored it, if it did."""
        assert self.dedup is not None
        ar = result.append_result if result is not None and result.is_ok else None
        if ar is None:
            self.dedup.settle(*claimed, None)
        else:
            self.dedup.settle(*claimed, Stored(ar.wrote_offset, queue_id, ar.logics_offset), ar.store_timestamp)

    def _earlier_ids(self, earlier: Sequence[Stored]) -> list[str]:
        """The offset message ids of messages stored before (read from their records: the store
        host is the one that stored them, which after a failover is not this broker)."""
        if self.dedup is not None:
            self.dedup.answered += len(earlier)
        ids = []
        for where in earlier:
            found = self.store.look_message_by_offset(where.commit_log_offset)
            ids.append(found.offset_msg_id if found is not None else create_offset_msg_id(
                self.live.value.broker_addr, where.commit_log_offset))
        return ids

    def _earlier_response(self, request: RemotingCommand, earlier: Sequence[Stored]) -> RemotingCommand:
        """The answer a send got when its messages were first stored (the first one's queue and offset)."""
        response = request.response(ResponseCode.SUCCESS)
        ids = ",".join(self._earlier_ids(earlier))
        response.ext_fields = self._response_fields(ids, earlier[0].queue_id, earlier[0].queue_offset)
        return response

    def _retry_or_dlq(
        self,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        topic: str,
        queue_id: int,
        reconsume_times: int,
        properties: dict[str, str],
    ) -> tuple[str, int]:
        """Sends to %RETRY%<group>: check the group; divert to %DLQ%<group> when retries are used up."""
        group_name = topic[len(names.RETRY_GROUP_TOPIC_PREFIX) :]
        group = self._group(group_name)
        if group is None:
            raise SubscriptionGroupNotExist(f"subscription group not exist, {group_name}",
            )
        max_times = group.retry_max_times
        if request.version >= 121 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
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
        return SendMessageResponseHeader(
            msg_id=msg_id, queue_id=queue_id, queue_offset=queue_offset, msg_region=config.region_id,
            trace_on=config.trace_on,
        ).to_ext_fields()

    # --- batch ---------------------------------------------------------------------------

    async def send_batch(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        started = self.monotonic()
        header = parse_send_header(request)
        topic_name = header.topic
        if len(topic_name) > names.TOPIC_MAX_LENGTH:
            raise MessageIllegal(f"message topic length too long {len(topic_name)}, max: {names.TOPIC_MAX_LENGTH}",
            )
        if names.is_retry_topic(topic_name):
            raise MessageIllegal(f"batch request does not support retry group {topic_name}")
        self._refuse_on_slave()
        topic, topic_config, queue_id = self._check_topic(request, header)
        config = self.live.value
        body = request.body_bytes()
        if not body:
            raise MessageIllegal("batch body is empty")
        if len(body) > config.store.max_message_size:
            raise MessageIllegal(f"batch body size {len(body)} exceeds the limit {config.store.max_message_size} bytes",
            )
        sys_flag = header.sys_flag
        if sys_flag & TRANSACTION_TYPE_MASK:
            raise MessageIllegal("batch message does not support transaction")
        properties = mc.decode_properties(header.properties or "")
        if _delay_level(properties) > 0:
            raise MessageIllegal("batch message does not support delay message")
        refuse_waiting_batch(properties)
        properties[mc.CLUSTER] = config.broker_cluster_name
        properties_string = mc.encode_properties(properties)
        check_batch_count(body, topic, len(properties_string.encode()), config.store.max_record_size)
        if topic_config.topic_filter_type == MULTI_TAG:
            sys_flag |= MULTI_TAGS
        # Batches keep WAIT in their stored properties (as 4.9.7 does); its meaning travels beside them.
        waits = waits_for_store(properties.get(mc.WAIT_STORE_MSG_OK))
        batch = MessageExtBatch(
            topic=topic,
            queue_id=queue_id,
            body=body,
            properties_string=properties_string,
            sys_flag=sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=peer.addr,
            store_host=config.broker_addr,
            reconsume_times=header.reconsume_times or 0,
            flag=header.flag,
            wait_store=waits,
        )
        if self.dedup is not None and (config.duplicate_detection_window_seconds or topic_config.attributes):
            window = self.dedup.window_ms(topic_config)
            if window:
                return await self._send_batch_once(request, batch, window, started, properties)
        async with self.gate:
            self._check_wait(started)
            result = await self._put_batch(batch)
        return await self._batch_response(request, result, batch, properties)

    async def _put_batch(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append a batch (inside the send gate), unless minInSyncReplicas refuses it first."""
        refused = self.put_refusal() if self.put_refusal is not None and batch.wait_store else None
        return refused or await self.store.put_messages(batch)

    async def _batch_response(
        self, request: RemotingCommand, result: PutMessageResult, batch: MessageExtBatch, properties: dict[str, str],
        earlier: Sequence[Stored | None] = (),
    ) -> RemotingCommand:
        """The answer to a batch put; `earlier` (one per item, None for the items this put stored)
        merges the items a duplicate window answered into its message ids."""
        config = self.live.value
        if self.replica_wait is not None:
            result = await self._replicated(result, waits_for_store(properties.get(mc.WAIT_STORE_MSG_OK)))
        response = status_response(request, result, config.store.max_message_size)
        if result.is_ok and result.append_result is not None:
            if self.store_health.failing:
                self.store_health.succeeded()
            ar = result.append_result
            ids = ",".join(ar.msg_ids) if ar.msg_ids else ar.msg_id
            first_queue, first_offset = batch.queue_id, ar.logics_offset
            if earlier:
                new_ids = iter(ar.msg_ids or (ar.msg_id,))
                old_ids = iter(self._earlier_ids([e for e in earlier if e is not None]))
                ids = ",".join(next(new_ids) if e is None else next(old_ids) for e in earlier)
                if earlier[0] is not None:
                    first_queue, first_offset = earlier[0].queue_id, earlier[0].queue_offset
            response.ext_fields = self._response_fields(ids, first_queue, first_offset)
            if self.stats is not None:
                self.stats.record_put(ar.msg_num, batch.topic, len(batch.body))
        return response

    async def _send_batch_once(
        self, request: RemotingCommand, batch: MessageExtBatch, window: int, started: float,
        properties: dict[str, str],
    ) -> RemotingCommand:
        """A batch on a topic with a duplicate window: items stored before are answered, not stored.

        When every item was stored before, the answer is the earlier one. When only some were, the
        others are stored (one batch, in their order) and the answer lists every item's message id in
        the request's order, with the queue and queue offset of the first item (wherever it is).
        """
        dedup = self.dedup
        assert dedup is not None
        topic = batch.topic
        items = batch_ids(bytes(batch.body))
        if items is None or not any(uniq for uniq, _ in items):
            async with self.gate:
                self._check_wait(started)
                result = await self._put_batch(batch)
            return await self._batch_response(request, result, batch, properties)
        claims: dict[Key, int] = {}  # id -> index of the item that claimed it
        earlier: list[Stored | None] = []
        try:
            for i, (uniq, _) in enumerate(items):
                key = id_key(uniq) if uniq else None
                found = None
                if key is not None and key not in claims:
                    found = await dedup.claim(topic, key, window)
                    if found is None:
                        claims[key] = i
                earlier.append(found)
            if all(e is not None for e in earlier):
                return self._earlier_response(request, [e for e in earlier if e is not None])
            if any(e is not None for e in earlier):
                batch.body = b"".join(raw for (_, raw), e in zip(items, earlier, strict=True) if e is None)
            async with self.gate:
                self._check_wait(started)
                result = await self._put_batch(batch)
            if result.is_ok:
                stored_ms = result.append_result.store_timestamp if result.append_result is not None else 0
                fresh = iter(stored_items(result, batch.queue_id))
                for i, e in enumerate(earlier):
                    if e is None:
                        where = next(fresh)
                        key = id_key(items[i][0]) if items[i][0] else None
                        if key is not None and claims.get(key) == i:
                            dedup.settle(topic, key, window, where, stored_ms)
                            del claims[key]
        finally:
            for key in claims:
                dedup.settle(topic, key, window, None)
        return await self._batch_response(request, result, batch, properties, earlier if any(earlier) else ())
