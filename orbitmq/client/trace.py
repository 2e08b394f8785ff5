"""Message trace records in RocketMQ's text format (the format of Java's TraceDataEncoder).

A trace message's body is a run of records; each record's fields are
separated by CONTENT_SPLITOR (0x01) and each record ends with FIELD_SPLITOR
(0x02). The fields, in order:

    Pub             type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost,
                    bodyLength, costTime, msgType, offsetMsgId, success
    SubBefore       type, timestamp, regionId, group, requestId, msgId, retryTimes, keys
    SubAfter        type, requestId, msgId, costTime, success, keys, contextCode, timestamp, group
    EndTransaction  type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost,
                    msgType, transactionId, transactionState, fromTransactionCheck

Absent values are written "null" (as Java's StringBuilder writes a null), so
Java's decoder, which drops trailing empty fields, reads our records too.
A trace message carries the traced messages' ids (and keys) as its KEYS, so
a key lookup of a message id finds its traces. Who sent or consumed a message
is the born host of the trace message itself (Java's tools read it there).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
DEFAULT_TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
TRACE_PRODUCER_GROUP_PREFIX = "_INNER_TRACE_PRODUCER-"
NULL = "null"


class TraceType(str, enum.Enum):
    PUB = "Pub"
    SUB_BEFORE = "SubBefore"
    SUB_AFTER = "SubAfter"
    END_TRANSACTION = "EndTransaction"


class MessageType(enum.IntEnum):
    """Java's MessageType; records carry its ordinal."""

    NORMAL = 0
    TRANS_HALF = 1
    TRANS_COMMIT = 2
    DELAY = 3
    ORDER = 4


class ConsumeReturnType(enum.IntEnum):
    """Why a consumption ended (SubAfter's contextCode, the ordinal of Java's ConsumeReturnType)."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclass
class TraceBean:
    """One traced message."""

    msg_id: str
    topic: str = ""
    tags: str | None = None
    keys: str | None = None
    store_host: str = ""
    body_length: int = 0
    msg_type: MessageType = MessageType.NORMAL
    offset_msg_id: str = ""
    retry_times: int = 0
    transaction_id: str | None = None
    transaction_state: str = ""
    from_transaction_check: bool = False


@dataclass
class TraceContext:
    """One traced event (a send, the start or end of a consumption) over one or more messages."""

    trace_type: TraceType
    timestamp: int
    group: str
    beans: list[TraceBean] = field(default_factory=list)
    region_id: str = "DefaultRegion"
    cost_ms: int = 0
    success: bool = True
    request_id: str = ""
    context_code: int = 0
    #: Born host of the trace message this record came in (filled by `decode` callers).
    client_host: str = ""


def _s(value: object) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _join(fields: Iterable[object]) -> str:
    return CONTENT_SPLITOR.join(_s(f) for f in fields) + FIELD_SPLITOR


def encode(ctx: TraceContext) -> str:
    """The records of one context (one per bean for consumptions, the first bean for sends)."""
    t = ctx.trace_type
    if t is TraceType.PUB:
        b = ctx.beans[0]
        return _join([t.value, ctx.timestamp, ctx.region_id, ctx.group, b.topic, b.msg_id, b.tags, b.keys,
                      b.store_host, b.body_length, ctx.cost_ms, int(b.msg_type), b.offset_msg_id, ctx.success])
    if t is TraceType.SUB_BEFORE:
        return "".join(_join([t.value, ctx.timestamp, ctx.region_id, ctx.group, ctx.request_id, b.msg_id,
                              b.retry_times, b.keys]) for b in ctx.beans)
    if t is TraceType.SUB_AFTER:
        return "".join(_join([t.value, ctx.request_id, b.msg_id, ctx.cost_ms, ctx.success, b.keys,
                              ctx.context_code, ctx.timestamp, ctx.group]) for b in ctx.beans)
    b = ctx.beans[0]
    return _join([t.value, ctx.timestamp, ctx.region_id, ctx.group, b.topic, b.msg_id, b.tags, b.keys,
                  b.store_host, int(b.msg_type), b.transaction_id, b.transaction_state, b.from_transaction_check])


def trace_keys(ctx: TraceContext) -> set[str]:
    """The keys the trace message is indexed under: every message id, and the messages' own keys."""
    keys: set[str] = set()
    for b in ctx.beans:
        keys.add(b.msg_id)
        if b.keys and b.keys != NULL:
            keys.update(k for k in b.keys.split(" ") if k)
    return keys


def _int(text: str, default: int = 0) -> int:
    try:
        return int(text)
    except ValueError:
        return default


def _value(text: str) -> str | None:
    return None if text == NULL else text


def decode(data: str) -> list[TraceContext]:
    """Every record of a trace body; records of unknown types or too few fields are skipped."""
    out: list[TraceContext] = []
    for record in data.split(FIELD_SPLITOR):
        f = record.split(CONTENT_SPLITOR)
        kind = f[0]
        if kind == TraceType.PUB.value and len(f) >= 13:
            bean = TraceBean(msg_id=f[5], topic=f[4], tags=_value(f[6]), keys=_value(f[7]), store_host=f[8],
                             body_length=_int(f[9]), msg_type=_msg_type(f[11]),
                             offset_msg_id=f[12] if len(f) >= 14 else "")
            out.append(TraceContext(TraceType.PUB, _int(f[1]), f[3], [bean], region_id=f[2], cost_ms=_int(f[10]),
                                    success=f[-1].lower() == "true" if len(f) <= 14 else f[13].lower() == "true"))
        elif kind == TraceType.SUB_BEFORE.value and len(f) >= 8:
            bean = TraceBean(msg_id=f[5], retry_times=_int(f[6]), keys=_value(f[7]))
            out.append(TraceContext(TraceType.SUB_BEFORE, _int(f[1]), f[3], [bean], region_id=f[2],
                                    request_id=f[4]))
        elif kind == TraceType.SUB_AFTER.value and len(f) >= 6:
            bean = TraceBean(msg_id=f[2], keys=_value(f[5]))
            out.append(TraceContext(
                TraceType.SUB_AFTER, _int(f[7]) if len(f) >= 9 else 0, f[8] if len(f) >= 9 else "", [bean],
                cost_ms=_int(f[3]), success=f[4].lower() == "true", request_id=f[1],
                context_code=_int(f[6]) if len(f) >= 7 else 0,
            ))
        elif kind == TraceType.END_TRANSACTION.value and len(f) >= 13:
            bean = TraceBean(msg_id=f[5], topic=f[4], tags=_value(f[6]), keys=_value(f[7]), store_host=f[8],
                             msg_type=_msg_type(f[9]), transaction_id=_value(f[10]), transaction_state=f[11],
                             from_transaction_check=f[12].lower() == "true")
            out.append(TraceContext(TraceType.END_TRANSACTION, _int(f[1]), f[3], [bean], region_id=f[2]))
    return out


def _msg_type(text: str) -> MessageType:
    try:
        return MessageType(int(text))
    except ValueError:
        return MessageType.NORMAL
