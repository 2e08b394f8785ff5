"""Sans-IO conversions between the apache.rocketmq.v2 messages and the 4.x remoting world.

* `to_remoting(message, ...)`: a gRPC `Message` checked (protocol status codes) and turned into the
  properties, body and sysflag of a SEND_MESSAGE_V2 request;
* `to_grpc(msg, ...)`: a stored message (as a pull/pop body decodes it) turned into the `Message`
  the RocketMQ 5 clients read, with an MD5 body digest and the system properties they need;
* receipt handles (`ReceiptHandle`): the POP extra info plus the commit-log offset, as text;
* transaction ids (`TransactionRef`): what END_TRANSACTION needs, carried through the client.

Problems raise `GrpcStatusError(code, message)`; the service answers them as a `Status`.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from orbitmq.common import names, topic_config
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.common.retry_policy import CustomizedRetryPolicy
from orbitmq.common.subscription_group import SubscriptionGroupConfig
from orbitmq.common.sysflag import TRANSACTION_PREPARED_TYPE
from orbitmq.proxy.pb import definition_pb2 as pb

#: RocketMQ 5's message-group property (the sharding key of FIFO messages).
SHARDING_KEY = "__SHARDINGKEY"
#: The POP extra info a broker puts on messages it re-delivers from a retry topic.
POP_CK = "POP_CK"
#: RocketMQ 5's topic attribute that restricts what a topic accepts.
MESSAGE_TYPE_ATTRIBUTE = topic_config.MESSAGE_TYPE_ATTRIBUTE
#: Names a gRPC user property may not take beyond the 4.x reserved ones.
_MORE_RESERVED = frozenset({SHARDING_KEY, POP_CK, mc.TIMER_DELIVER_MS, mc.TIMER_DELAY_SEC, mc.TIMER_DELAY_MS,
                            mc.TRANSACTION_ID, mc.START_DELIVER_TIME})
#: Properties that are not shown to gRPC consumers as user properties.
_SYSTEM_NAMES = mc.RESERVED_NAMES | _MORE_RESERVED | {
    "1ST_POP_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "TRANSACTION_CHECK_TIMES", "CHECK_IMMUNITY_TIME_IN_SECONDS",
    "TIMER_OUT_MS", "TIMER_ENQUEUE_MS", "TIMER_DEQUEUE_MS", "TIMER_ROLL_TIMES", "TIMER_DEL_UNIQKEY",
}
#: Message types a topic made the 4.x way accepts (RocketMQ 5's MIXED).
ALL_TYPES = (pb.NORMAL, pb.FIFO, pb.DELAY, pb.TRANSACTION)
_TYPE_BY_NAME = {"NORMAL": (pb.NORMAL,), "FIFO": (pb.FIFO,), "DELAY": (pb.DELAY,),
                 "TRANSACTION": (pb.TRANSACTION,), "MIXED": ALL_TYPES}


def set_backoff(policy: pb.RetryPolicy, group: SubscriptionGroupConfig) -> None:
    """A consumer's Settings backoff from its group, as RocketMQ 5's proxy makes it: max_attempts is
    retryMaxTimes + 1; the group's retry policy becomes a customized backoff (its delays, in order) or an
    exponential one (initial, max, multiplier)."""
    policy.max_attempts = group.max_delivery_attempts
    chosen = group.group_retry_policy.policy
    if isinstance(chosen, CustomizedRetryPolicy):
        nexts = policy.customized_backoff.next
        del nexts[:]
        for ms in chosen.next_ms:
            nexts.add().FromMilliseconds(ms)
    else:
        eb = policy.exponential_backoff
        eb.initial.FromMilliseconds(chosen.initial_ms)
        eb.max.FromMilliseconds(chosen.max_ms)
        eb.multiplier = float(chosen.multiplier)


def real(resource: pb.Resource) -> str:
    """The broker-side name of a topic or group: RocketMQ's `namespace%name` when a namespace is set."""
    return f"{resource.resource_namespace}%{resource.name}" if resource.resource_namespace else resource.name


def plain(name: str, namespace: str) -> str:
    """`name` without the `namespace%` prefix `real` adds."""
    prefix = f"{namespace}%"
    return name[len(prefix):] if namespace and name.startswith(prefix) else name


class GrpcStatusError(Exception):
    """A request the protocol answers with a non-OK `Status`."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def accepted_types(attribute: str | None) -> tuple[int, ...]:
    """The message types a topic whose `message.type` attribute is `attribute` accepts."""
    if not attribute:
        return ALL_TYPES
    return _TYPE_BY_NAME.get(attribute.upper(), ALL_TYPES)


def type_name(message_type: int) -> str:
    return str(pb.MessageType.Name(message_type)) if message_type in pb.MessageType.values() else str(message_type)


# --- sending --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OutgoingMessage:
    topic: str
    message_id: str
    message_type: int
    properties: dict[str, str]
    body: bytes
    sys_flag: int
    born_timestamp_ms: int
    message_group: str | None


def to_remoting(
    message: pb.Message, *, max_body_size: int, max_delay_ms: int, now_ms: int | None = None, producer_group: str = ""
) -> OutgoingMessage:
    """Check one gRPC message and give what SEND_MESSAGE_V2 carries for it."""
    topic = real(message.topic)
    if names.validate_topic(topic) is not None:
        raise GrpcStatusError(pb.ILLEGAL_TOPIC, f"illegal topic name {topic!r}")
    sp = message.system_properties
    if not sp.message_id or len(sp.message_id) > 128:
        raise GrpcStatusError(pb.ILLEGAL_MESSAGE_ID, "the message id is empty or too long")
    body = bytes(message.body)
    if sp.body_encoding == pb.GZIP:
        import gzip
        import zlib

        try:
            body = gzip.decompress(body) if body[:2] == b"\x1f\x8b" else zlib.decompress(body)
        except (OSError, zlib.error, EOFError):
            raise GrpcStatusError(pb.MESSAGE_CORRUPTED, "the body is marked GZIP but does not inflate") from None
    if not body:
        raise GrpcStatusError(pb.MESSAGE_BODY_EMPTY, "the message body is empty")
    if len(body) > max_body_size:
        raise GrpcStatusError(
            pb.MESSAGE_BODY_TOO_LARGE, f"the message body is {len(body)} bytes, over the limit of {max_body_size}"
        )
    props: dict[str, str] = {}
    for key, value in message.user_properties.items():
        if not key or key in mc.RESERVED_NAMES or key in _MORE_RESERVED:
            raise GrpcStatusError(pb.ILLEGAL_MESSAGE_PROPERTY_KEY, f"user property {key!r} is a reserved name")
        if any(c in key + value for c in (mc.NAME_VALUE_SEPARATOR, mc.PROPERTY_SEPARATOR)):
            raise GrpcStatusError(pb.ILLEGAL_MESSAGE_PROPERTY_KEY, f"user property {key!r} holds a control character")
        props[key] = value
    if sp.HasField("tag"):
        if not sp.tag.strip() or "|" in sp.tag or any(c in sp.tag for c in "\x01\x02"):
            raise GrpcStatusError(pb.ILLEGAL_MESSAGE_TAG, f"illegal tag {sp.tag!r}")
        props[mc.TAGS] = sp.tag
    if sp.keys:
        for key in sp.keys:
            if not key.strip() or " " in key or any(c in key for c in "\x01\x02"):
                raise GrpcStatusError(pb.ILLEGAL_MESSAGE_KEY, f"illegal message key {key!r}")
        props[mc.KEYS] = mc.KEY_SEPARATOR.join(sp.keys)
    props[mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = sp.message_id
    props[mc.WAIT_STORE_MSG_OK] = "true"
    now = int(time.time() * 1000) if now_ms is None else now_ms
    mtype = sp.message_type or pb.NORMAL
    group = sp.message_group if sp.HasField("message_group") else None
    sys_flag = 0
    if mtype == pb.FIFO:
        if not group:
            raise GrpcStatusError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "a FIFO message needs a message group")
    elif group is not None:
        raise GrpcStatusError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                              f"a {type_name(mtype)} message cannot carry a message group")
    if group is not None:
        if not group or len(group) > 64 or any(c in group for c in "\x01\x02"):
            raise GrpcStatusError(pb.ILLEGAL_MESSAGE_GROUP, f"illegal message group {group!r}")
        props[SHARDING_KEY] = group
    if mtype == pb.DELAY:
        if not sp.HasField("delivery_timestamp"):
            raise GrpcStatusError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, "a DELAY message needs a delivery timestamp")
        ts = sp.delivery_timestamp
        deliver_ms = ts.seconds * 1000 + ts.nanos // 1_000_000
        if deliver_ms > now + max_delay_ms:
            raise GrpcStatusError(pb.ILLEGAL_DELIVERY_TIME,
                                  f"the delivery time is more than {max_delay_ms // 1000} s ahead (seconds expected)")
        if deliver_ms > now:
            props[mc.TIMER_DELIVER_MS] = str(deliver_ms)
    elif sp.HasField("delivery_timestamp"):
        raise GrpcStatusError(pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                              f"a {type_name(mtype)} message cannot carry a delivery timestamp")
    if mtype == pb.TRANSACTION:
        props[mc.TRANSACTION_PREPARED] = "true"
        props[mc.PRODUCER_GROUP] = producer_group or topic
        sys_flag |= TRANSACTION_PREPARED_TYPE
    elif mtype not in (pb.NORMAL, pb.FIFO, pb.DELAY):
        raise GrpcStatusError(pb.UNSUPPORTED, f"message type {type_name(mtype)} is not served")
    encoded = mc.encode_properties(props)
    if len(encoded.encode()) > mc.MAX_PROPERTIES_BYTES:
        raise GrpcStatusError(pb.MESSAGE_PROPERTIES_TOO_LARGE, "the message's properties are too large")
    born = sp.born_timestamp.seconds * 1000 + sp.born_timestamp.nanos // 1_000_000 if sp.HasField(
        "born_timestamp") else now
    return OutgoingMessage(topic, sp.message_id, mtype, props, body, sys_flag, born or now, group)


# --- delivering -----------------------------------------------------------------------------------


def message_type_of(props: dict[str, str]) -> int:
    if props.get(mc.TRANSACTION_PREPARED) == "true":
        return pb.TRANSACTION
    if SHARDING_KEY in props:
        return pb.FIFO
    if mc.TIMER_DELIVER_MS in props or mc.DELAY_TIME_LEVEL in props or mc.TIMER_DELAY_SEC in props:
        return pb.DELAY
    return pb.NORMAL


def _timestamp(ms: int) -> Timestamp:
    return Timestamp(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def to_grpc(
    msg: MessageExt,
    *,
    namespace: str = "",
    topic: str | None = None,
    receipt_handle: str | None = None,
    invisible_ms: int | None = None,
) -> pb.Message:
    """The `Message` a RocketMQ 5 client reads for a stored message (body already inflated)."""
    props = dict(msg.properties)
    out = pb.Message()
    real_topic = topic or props.get(mc.RETRY_TOPIC) or msg.topic
    out.topic.resource_namespace = namespace
    out.topic.name = real_topic
    for key, value in props.items():
        if key not in _SYSTEM_NAMES:
            out.user_properties[key] = value
    sp = out.system_properties
    tag = props.get(mc.TAGS)
    if tag:
        sp.tag = tag
    keys = props.get(mc.KEYS)
    if keys:
        sp.keys.extend(k for k in keys.split(mc.KEY_SEPARATOR) if k)
    sp.message_id = props.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.msg_id or msg.offset_msg_id
    body = bytes(msg.body or b"")
    out.body = body
    sp.body_digest.type = pb.MD5
    sp.body_digest.checksum = hashlib.md5(body).hexdigest().upper()
    sp.body_encoding = pb.IDENTITY
    sp.message_type = message_type_of(props)  # type: ignore[assignment]
    sp.born_timestamp.CopyFrom(_timestamp(msg.born_timestamp))
    sp.born_host = msg.born_host.rsplit(":", 1)[0]
    sp.store_timestamp.CopyFrom(_timestamp(msg.store_timestamp))
    sp.store_host = msg.store_host.rsplit(":", 1)[0]
    deliver = props.get(mc.TIMER_DELIVER_MS)
    if deliver and deliver.isdigit():
        sp.delivery_timestamp.CopyFrom(_timestamp(int(deliver)))
    if receipt_handle is not None:
        sp.receipt_handle = receipt_handle
    sp.queue_id = msg.queue_id
    sp.queue_offset = msg.queue_offset
    if invisible_ms is not None:
        sp.invisible_duration.CopyFrom(Duration(seconds=invisible_ms // 1000, nanos=(invisible_ms % 1000) * 1_000_000))
    sp.delivery_attempt = msg.reconsume_times + 1
    group = props.get(SHARDING_KEY)
    if group:
        sp.message_group = group
    return out


# --- receipt handles ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    """`startOffset retrieveTime invisibleTime reviveQid topicType brokerName queueId offset commitLogOffset`."""

    ck_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    topic_type: int
    broker_name: str
    queue_id: int
    offset: int
    commit_log_offset: int = -1

    @property
    def next_visible_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def extra_info(self) -> str:
        return " ".join(str(v) for v in (self.ck_offset, self.pop_time, self.invisible_time, self.revive_qid,
                                          self.topic_type, self.broker_name, self.queue_id, self.offset))

    def encode(self) -> str:
        return f"{self.extra_info} {self.commit_log_offset}"

    def real_topic(self, topic: str, group: str) -> str:
        if self.topic_type == 1:
            return f"{names.retry_topic(group)}_{topic}"
        if self.topic_type == 2:
            return f"{names.retry_topic(group)}+{topic}"
        return topic

    @classmethod
    def decode(cls, text: str) -> ReceiptHandle:
        parts = text.split(" ")
        if len(parts) < 8 or len(parts) > 9:
            raise GrpcStatusError(pb.INVALID_RECEIPT_HANDLE, "the receipt handle is not one this server gave")
        try:
            numbers = [int(p) for p in parts[:5]]
            queue_id, offset = int(parts[6]), int(parts[7])
            clo = int(parts[8]) if len(parts) == 9 else -1
        except ValueError:
            raise GrpcStatusError(pb.INVALID_RECEIPT_HANDLE, "the receipt handle is not one this server gave") from None
        if not parts[5] or numbers[4] not in (0, 1, 2) or queue_id < 0 or offset < 0 or min(numbers[:3]) < 0:
            raise GrpcStatusError(pb.INVALID_RECEIPT_HANDLE, "the receipt handle is not one this server gave")
        return cls(numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], parts[5], queue_id, offset, clo)


def topic_type_of(topic: str) -> int:
    if topic.startswith("%RETRY%"):
        return 2 if "+" in topic else 1
    return 0


def handles_from_pop(
    fields: dict[str, str], msgs: list[MessageExt], broker_name: str
) -> list[ReceiptHandle]:
    """One handle per message of a POP_MESSAGE answer (its header summaries, §2.2 of the POP reference)."""
    pop_time = int(fields.get("popTime", "0") or 0)
    invisible = int(fields.get("invisibleTime", "0") or 0)
    revive_qid = int(fields.get("reviveQid", "0") or 0)
    starts: dict[str, int] = {}
    for entry in (fields.get("startOffsetInfo") or "").split(";"):
        parts = entry.split()
        if len(parts) == 3:
            starts[f"{parts[0]}@{parts[1]}"] = int(parts[2])
    handles: list[ReceiptHandle] = []
    for msg in msgs:
        ck = msg.properties.get(POP_CK)
        if ck:
            parts = ck.split(" ")
            try:
                handles.append(ReceiptHandle.decode(" ".join(parts[:8]) + f" {msg.commit_log_offset}"))
                continue
            except GrpcStatusError:
                pass
        ttype = topic_type_of(msg.topic)
        start = starts.get(f"{ttype}@{msg.queue_id}", msg.queue_offset)
        handles.append(ReceiptHandle(start, pop_time, invisible, revive_qid, ttype, broker_name, msg.queue_id,
                                     msg.queue_offset, msg.commit_log_offset))
    return handles


# --- transactions ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TransactionRef:
    """What END_TRANSACTION needs, carried in the gRPC transaction id."""

    broker_name: str
    commit_log_offset: int
    queue_offset: int
    producer_group: str

    def encode(self) -> str:
        return f"{self.commit_log_offset}:{self.queue_offset}:{self.broker_name}:{self.producer_group}"

    @classmethod
    def decode(cls, text: str) -> TransactionRef:
        parts = text.split(":", 3)
        try:
            if len(parts) != 4 or not parts[2]:
                raise ValueError
            return cls(parts[2], int(parts[0]), int(parts[1]), parts[3])
        except ValueError:
            raise GrpcStatusError(pb.INVALID_TRANSACTION_ID, "the transaction id is not one this server gave") from None
