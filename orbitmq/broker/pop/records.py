"""Checkpoint (CK) and ack records of the revive topic, in RocketMQ's JSON form (sans-IO).

A CK says "these messages of (topic, queue) were popped by a group at popTime for
invisibleTime"; an ACK says "this one of them was acked". Both are stored as messages of the
revive topic (tags `ck`, `ack`, `bAck`), so the in-flight state is as durable as any message.
Bodies are fastjson's sorted-key JSON (POP reference §3.2):

    CK   {"bm":0,"bn":"broker-a","c":"G","d":[0,5],"it":60000,"n":2,"pt":...,"q":3,"ro":0,"so":100,"t":"T"}
    ACK  {"ao":105,"bn":"broker-a","c":"G","pt":...,"q":3,"so":100,"t":"T"}
    bAck the ACK fields with "aol":[100,105] and "ao":0
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orbitmq.common import jsonbody

#: The revive topic is this prefix and the cluster name; sends to it are refused (handlers/send.py).
REVIVE_TOPIC_PREFIX = "rmq_sys_REVIVE_LOG_"
CK_TAG = "ck"
ACK_TAG = "ack"
BATCH_ACK_TAG = "bAck"
#: The most messages one CK covers (the POP batch limit).
MAX_CK_NUMS = 32


class RecordError(ValueError):
    """A revive-topic body or a batch-ack body that cannot be read."""


def _int(obj: dict[str, Any], *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = obj.get(key)
        if value is None:
            continue
        if isinstance(value, bool):
            break
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            digits = value[1:] if value[:1] == "-" else value
            if digits.isascii() and digits.isdigit():
                return int(value)
        break
    if default is not None:
        return default
    raise RecordError(f"the field {keys[0]} is missing or not a number")


def _str(obj: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = obj.get(key)
        if isinstance(value, str):
            return value
    raise RecordError(f"the field {keys[0]} is missing or not a string")


def merge_key(topic: str, group: str, queue_id: int, start_offset: int, pop_time: int, broker_name: str) -> str:
    """RocketMQ's CK merge key: the fields concatenated without separators."""
    return f"{topic}{group}{queue_id}{start_offset}{pop_time}{broker_name}"


@dataclass(slots=True)
class CheckPoint:
    topic: str
    group: str
    queue_id: int
    start_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    broker_name: str
    #: offset - start_offset of each popped message, in order.
    deltas: list[int]
    #: Bit i set: message i acked (or revived).
    bitmap: int = 0
    #: The CK record's offset in its revive queue (-1 until stored).
    revive_offset: int = -1
    #: How many times reviving failed and the CK was put back.
    re_put: int = 0

    @property
    def num(self) -> int:
        return len(self.deltas)

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def key(self) -> str:
        return merge_key(self.topic, self.group, self.queue_id, self.start_offset, self.pop_time, self.broker_name)

    @property
    def settled(self) -> bool:
        return self.bitmap == (1 << self.num) - 1

    def offsets(self) -> list[int]:
        return [self.start_offset + d for d in self.deltas]

    def index_of(self, offset: int) -> int:
        try:
            return self.deltas.index(offset - self.start_offset)
        except ValueError:
            return -1

    def open_offsets(self) -> list[int]:
        """Offsets neither acked nor revived."""
        return [self.start_offset + d for i, d in enumerate(self.deltas) if not self.bitmap >> i & 1]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "bm": self.bitmap, "bn": self.broker_name, "c": self.group, "d": self.deltas, "it": self.invisible_time,
            "n": self.num, "pt": self.pop_time, "q": self.queue_id, "reviveTime": self.revive_time,
            "ro": max(self.revive_offset, 0), "so": self.start_offset, "t": self.topic,
        }
        if self.re_put:
            out["rp"] = str(self.re_put)
        return out

    def encode(self) -> bytes:
        return jsonbody.dumps(self.to_json())

    @classmethod
    def from_json(cls, obj: object, revive_qid: int) -> CheckPoint:
        if not isinstance(obj, dict):
            raise RecordError("a checkpoint body is not a JSON object")
        num = _int(obj, "n", "num")
        raw_deltas = obj.get("d", obj.get("queueOffsetDiff"))
        if isinstance(raw_deltas, list) and raw_deltas:
            if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in raw_deltas):
                raise RecordError("the checkpoint field d holds something other than offsets")
            deltas = list(raw_deltas)
        else:
            deltas = list(range(num))
        if not 0 < len(deltas) <= MAX_CK_NUMS:
            raise RecordError(f"a checkpoint covers 1 to {MAX_CK_NUMS} messages, not {len(deltas)}")
        return cls(
            topic=_str(obj, "t", "topic"), group=_str(obj, "c", "cid"), queue_id=_int(obj, "q", "queueId"),
            start_offset=_int(obj, "so", "startOffset"), pop_time=_int(obj, "pt", "popTime"),
            invisible_time=_int(obj, "it", "invisibleTime"), revive_qid=revive_qid,
            broker_name=_str(obj, "bn", "brokerName"), deltas=deltas, bitmap=_int(obj, "bm", "bitMap", default=0),
            revive_offset=_int(obj, "ro", "reviveOffset", default=-1), re_put=_int(obj, "rp", default=0),
        )


@dataclass(slots=True)
class AckRecord:
    topic: str
    group: str
    queue_id: int
    start_offset: int
    pop_time: int
    broker_name: str
    ack_offsets: list[int] = field(default_factory=list)

    @property
    def key(self) -> str:
        return merge_key(self.topic, self.group, self.queue_id, self.start_offset, self.pop_time, self.broker_name)

    @property
    def tag(self) -> str:
        return ACK_TAG if len(self.ack_offsets) == 1 else BATCH_ACK_TAG

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "bn": self.broker_name, "c": self.group, "pt": self.pop_time, "q": self.queue_id,
            "so": self.start_offset, "t": self.topic,
        }
        if len(self.ack_offsets) == 1:
            out["ao"] = self.ack_offsets[0]
        else:
            out["ao"] = 0
            out["aol"] = self.ack_offsets
        return out

    def encode(self) -> bytes:
        return jsonbody.dumps(self.to_json())

    @classmethod
    def from_json(cls, obj: object) -> AckRecord:
        if not isinstance(obj, dict):
            raise RecordError("an ack body is not a JSON object")
        many = obj.get("aol", obj.get("ackOffsetList"))
        if isinstance(many, list):
            if not all(isinstance(o, int) and not isinstance(o, bool) for o in many):
                raise RecordError("the ack field aol holds something other than offsets")
            offsets = list(many)
        else:
            offsets = [_int(obj, "ao", "ackOffset")]
        return cls(
            topic=_str(obj, "t", "topic"), group=_str(obj, "c", "consumerGroup"), queue_id=_int(obj, "q", "queueId"),
            start_offset=_int(obj, "so", "startOffset"), pop_time=_int(obj, "pt", "popTime"),
            broker_name=_str(obj, "bn", "brokerName"), ack_offsets=offsets,
        )


# --- BATCH_ACK_MESSAGE body ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BatchAck:
    """One entry of a BATCH_ACK_MESSAGE body: offsets `so + i` for each set bit i of `b`."""

    group: str
    topic: str  # the original topic; the real one follows from `retry`
    retry: int  # topic type 0, 1 or 2
    start_offset: int
    queue_id: int
    revive_qid: int
    invisible_time: int
    pop_time: int
    offsets: tuple[int, ...]


def bitset_to_bytes(indexes: list[int]) -> bytes:
    """Java's BitSet.toByteArray: little-endian bits, trailing zero bytes dropped."""
    value = 0
    for i in indexes:
        value |= 1 << i
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


def parse_batch_ack_body(body: bytes) -> list[BatchAck]:
    import base64
    import binascii

    try:
        data = jsonbody.loads(body)
    except Exception as exc:  # noqa: BLE001 - any parse failure is a refusal with a plain remark
        raise RecordError(f"the batch ack body is not JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise RecordError("the batch ack body is not a JSON object")
    acks = data.get("acks")
    if acks is None:
        acks = []
    if not isinstance(acks, list):
        raise RecordError("the batch ack field acks is not a list")
    out = []
    for entry in acks:
        if not isinstance(entry, dict):
            raise RecordError("the batch ack field acks holds a non-object")
        raw = entry.get("b")
        try:
            bits = base64.b64decode(raw, validate=True) if isinstance(raw, str) else b""
        except (binascii.Error, ValueError):
            raise RecordError("the batch ack field b is not base64") from None
        if len(bits) > 64:
            raise RecordError("the batch ack field b is longer than a batch")
        value = int.from_bytes(bits, "little")
        so = _int(entry, "so")
        retry = _int(entry, "r", default=0)
        if retry not in (0, 1, 2):
            raise RecordError(f"the batch ack field r must be 0, 1 or 2, got {retry}")
        out.append(BatchAck(
            group=_str(entry, "c"), topic=_str(entry, "t"), retry=retry, start_offset=so,
            queue_id=_int(entry, "q"), revive_qid=_int(entry, "rq"), invisible_time=_int(entry, "it"),
            pop_time=_int(entry, "pt"), offsets=tuple(so + i for i in range(value.bit_length()) if value >> i & 1),
        ))
    return out
