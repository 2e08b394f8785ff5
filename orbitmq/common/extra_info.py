"""The POP `extraInfo` string, receipt handles and the POP response's offset summaries (sans-IO).

extraInfo (RocketMQ's ExtraInfoUtil form) is eight fields separated by one space:

    ckQueueOffset popTime invisibleTime reviveQid topicType brokerName queueId queueOffset

`topicType` is 0 for a normal topic, 1 for a V1 POP retry topic (`%RETRY%{group}_{topic}`),
2 for a V2 one (`%RETRY%{group}+{topic}`); reviveQid 999 marks a FIFO pop (no checkpoint).
The gRPC receipt handle is the extraInfo plus the message's commitLog offset as a ninth field.

The POP response summarises offsets per `type@queueId` (entries joined by `;`):
`startOffsetInfo` "type queueId ckStart", `msgOffsetInfo` "type queueId off1,off2,…",
`orderCountInfo` "type qo<queueId>%<offset> count" per message and "type queueId minCount" per queue.
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.common.names import RETRY_GROUP_TOPIC_PREFIX

#: reviveQid of FIFO pops: no checkpoint, the order info holds the state.
FIFO_REVIVE_QID = 999
NORMAL_TOPIC = 0
RETRY_TOPIC_V1 = 1
RETRY_TOPIC_V2 = 2


class ExtraInfoError(ValueError):
    """An extraInfo or receipt handle that cannot be read (the handler answers with RocketMQ's code)."""


def topic_type(topic: str) -> int:
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_TOPIC_V2 if "+" in topic else RETRY_TOPIC_V1
    return NORMAL_TOPIC


def pop_retry_topic(group: str, topic: str, v2: bool = False) -> str:
    """The POP retry topic of `group` on `topic` (V1 `%RETRY%g_t` by default, V2 `%RETRY%g+t`)."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}{'+' if v2 else '_'}{topic}"


def real_topic(kind: int, topic: str, group: str) -> str:
    """The topic a message of `kind` popped through original `topic` lives in."""
    if kind == RETRY_TOPIC_V1:
        return pop_retry_topic(group, topic)
    if kind == RETRY_TOPIC_V2:
        return pop_retry_topic(group, topic, v2=True)
    return topic


@dataclass(frozen=True, slots=True)
class ExtraInfo:
    ck_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    kind: int
    broker_name: str
    queue_id: int
    offset: int

    @property
    def next_visible_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def is_fifo(self) -> bool:
        return self.revive_qid == FIFO_REVIVE_QID

    def __str__(self) -> str:
        return (
            f"{self.ck_offset} {self.pop_time} {self.invisible_time} {self.revive_qid} {self.kind} "
            f"{self.broker_name} {self.queue_id} {self.offset}"
        )

    def handle(self, commit_log_offset: int) -> str:
        """The gRPC receipt handle: this extraInfo and the message's commitLog offset."""
        return f"{self} {commit_log_offset}"


def _number(raw: str, what: str) -> int:
    digits = raw[1:] if raw[:1] == "-" else raw
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 18:
        raise ExtraInfoError(f"the extraInfo field {what} is not a number: {raw[:40]!r}")
    return int(raw)


def parse_extra_info(text: str) -> ExtraInfo:
    """Read an extraInfo (8 fields; the oldest 7-field form has no queueOffset: -1)."""
    parts = text.split(" ")
    if len(parts) < 7:
        raise ExtraInfoError(f"the extraInfo must have at least 7 fields, got {len(parts)}")
    kind = _number(parts[4], "topicType")
    if kind not in (NORMAL_TOPIC, RETRY_TOPIC_V1, RETRY_TOPIC_V2):
        raise ExtraInfoError(f"the extraInfo topic type must be 0, 1 or 2, got {kind}")
    if not parts[5]:
        raise ExtraInfoError("the extraInfo has no broker name")
    return ExtraInfo(
        ck_offset=_number(parts[0], "ckQueueOffset"),
        pop_time=_number(parts[1], "popTime"),
        invisible_time=_number(parts[2], "invisibleTime"),
        revive_qid=_number(parts[3], "reviveQid"),
        kind=kind,
        broker_name=parts[5],
        queue_id=_number(parts[6], "queueId"),
        offset=_number(parts[7], "queueOffset") if len(parts) > 7 else -1,
    )


def parse_receipt_handle(text: str) -> tuple[ExtraInfo, int]:
    """A gRPC receipt handle: (its extraInfo, commitLog offset or -1 when absent)."""
    parts = text.split(" ")
    if len(parts) < 8:
        raise ExtraInfoError(f"the receipt handle must have at least 8 fields, got {len(parts)}")
    info = parse_extra_info(" ".join(parts[:8]))
    return info, (_number(parts[8], "commitLogOffset") if len(parts) > 8 else -1)


# --- response summaries --------------------------------------------------------------------


def start_offset_entry(kind: int, queue_id: int, ck_start: int) -> str:
    return f"{kind} {queue_id} {ck_start}"


def msg_offset_entry(kind: int, queue_id: int, offsets: list[int]) -> str:
    return f"{kind} {queue_id} {','.join(map(str, offsets))}"


def order_count_entries(kind: int, queue_id: int, counts: list[tuple[int, int]]) -> list[str]:
    """Per message "type qo<queueId>%<offset> count", then the queue's minimum count (old clients)."""
    entries = [f"{kind} qo{queue_id}%{offset} {count}" for offset, count in counts]
    if counts:
        entries.append(f"{kind} {queue_id} {min(c for _, c in counts)}")
    return entries


def parse_start_offset_info(text: str | None) -> dict[str, int]:
    """`type@queueId` -> checkpoint start offset."""
    out: dict[str, int] = {}
    for entry in (text or "").split(";"):
        parts = entry.split(" ")
        if len(parts) == 3:
            out[f"{parts[0]}@{parts[1]}"] = _number(parts[2], "startOffset")
    return out


def parse_msg_offset_info(text: str | None) -> dict[str, list[int]]:
    """`type@queueId` -> the popped offsets of that queue, in order."""
    out: dict[str, list[int]] = {}
    for entry in (text or "").split(";"):
        parts = entry.split(" ")
        if len(parts) == 3:
            out[f"{parts[0]}@{parts[1]}"] = [_number(p, "offset") for p in parts[2].split(",") if p]
    return out


def parse_order_count_info(text: str | None) -> dict[str, int]:
    """`type@qo<queueId>%<offset>` (per message) or `type@queueId` (per queue) -> delivery count."""
    out: dict[str, int] = {}
    for entry in (text or "").split(";"):
        parts = entry.split(" ")
        if len(parts) == 3:
            out[f"{parts[0]}@{parts[1]}"] = _number(parts[2], "count")
    return out
