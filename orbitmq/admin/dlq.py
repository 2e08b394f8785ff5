"""Dead letters you can work with: browse, select, resend and export a group's `%DLQ%<group>`.

The admin commands queryDlq, resendDlq and exportDlq (admin/commands/dlq.py)
and the console call these functions; each takes a connected AdminClient.

* `browse` reads every dead letter of the group (all brokers serving the DLQ
  topic, oldest first) as `DeadLetter`s: the original topic (RETRY_TOPIC),
  the original message id, the error that sent it there (ORBITMQ_LAST_ERROR,
  recorded by OrbitMQ's consumers; empty for other clients), the attempts
  (ORBITMQ_ATTEMPTS, else the record's reconsume times), when it was born and
  when it became a dead letter, and whether it was resent already.
* `Selection` picks dead letters by message id, key, time range (when they
  became dead letters) and a SQL92 expression on their properties.
* `resend` sends the selected ones to their original topic (or to `topic`);
  `dry_run` only counts. It is idempotent by original message id: each
  resent copy carries a UNIQ_KEY derived from the group and the original id
  plus ORBITMQ_DLQ_ORIGIN, and a marker record in the DLQ lists the ids
  resent. A second resend skips ids found in a marker, or (should a run
  have stopped between a send and its marker) whose derived UNIQ_KEY the
  target topic's index already holds.
* `export_jsonl` writes the selection as JSON lines.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from orbitmq.admin.api import AdminClient
from orbitmq.client.queue import MessageQueue
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.common.pull import PullStatus
from orbitmq.errors import BrokerError, ClientError
from orbitmq.filter.sql92 import Sql92Filter, compile_sql92
from orbitmq.remoting.codes import ResponseCode

#: Messages asked for per pull while reading a DLQ.
PULL_BATCH = 32
#: Ids listed per marker record.
MARKER_IDS_PER_RECORD = 1_000
#: Properties a resent copy does not take over from the dead letter (broker and retry bookkeeping).
_DROPPED_ON_RESEND = frozenset({
    mc.RETRY_TOPIC, mc.ORIGIN_MESSAGE_ID, mc.RECONSUME_TIME, mc.MAX_RECONSUME_TIMES, mc.DELAY_TIME_LEVEL,
    mc.REAL_TOPIC, mc.REAL_QUEUE_ID, mc.MIN_OFFSET, mc.MAX_OFFSET, mc.CONSUME_START_TIMESTAMP,
    mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, mc.WAIT_STORE_MSG_OK, mc.TRANSACTION_PREPARED, mc.PRODUCER_GROUP,
    mc.ORBITMQ_LAST_ERROR, mc.ORBITMQ_ATTEMPTS, mc.TIMER_DELIVER_MS, mc.TIMER_DELAY_SEC, mc.TIMER_DELAY_MS,
    "TIMER_OUT_MS", "TIMER_ENQUEUE_MS",
})


@dataclass(frozen=True)
class DeadLetter:
    msg: MessageExt
    broker_name: str
    resent: bool = False

    @property
    def original_topic(self) -> str:
        return self.msg.properties.get(mc.RETRY_TOPIC) or self.msg.topic

    @property
    def original_id(self) -> str:
        """The id the producer gave the message (UNIQ_KEY), else the first delivery's offset id."""
        return (self.msg.properties.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                or self.msg.properties.get(mc.ORIGIN_MESSAGE_ID) or self.msg.offset_msg_id)

    @property
    def error(self) -> str:
        return self.msg.properties.get(mc.ORBITMQ_LAST_ERROR, "")

    @property
    def attempts(self) -> int:
        raw = self.msg.properties.get(mc.ORBITMQ_ATTEMPTS, "")
        return int(raw) if raw.isdigit() else self.msg.reconsume_times

    @property
    def dead_ms(self) -> int:
        return self.msg.store_timestamp

    def to_json(self) -> dict[str, Any]:
        body = bytes(self.msg.body)
        try:
            text: str | None = body.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        out: dict[str, Any] = {
            "originalId": self.original_id,
            "originalTopic": self.original_topic,
            "dlqOffsetMsgId": self.msg.offset_msg_id,
            "broker": self.broker_name,
            "queueOffset": self.msg.queue_offset,
            "error": self.error,
            "attempts": self.attempts,
            "bornTimestamp": self.msg.born_timestamp,
            "deadTimestamp": self.dead_ms,
            "tags": self.msg.tags,
            "keys": list(self.msg.keys),
            "properties": dict(sorted(self.msg.properties.items())),
            "resent": self.resent,
        }
        if text is not None:
            out["body"] = text
        else:
            out["bodyBase64"] = base64.b64encode(body).decode("ascii")
        return out


@dataclass(frozen=True)
class Selection:
    """Which dead letters an operation takes; every given criterion must hold (none given: all)."""

    ids: frozenset[str] = frozenset()
    key: str | None = None
    begin_ms: int | None = None
    end_ms: int | None = None
    sql: Sql92Filter | None = None

    @classmethod
    def of(cls, *, ids: Iterable[str] = (), key: str | None = None, begin_ms: int | None = None,
           end_ms: int | None = None, sql: str | None = None) -> Selection:
        """Raises ValueError (SqlParseError) for a bad SQL92 expression or an empty time range."""
        if begin_ms is not None and end_ms is not None and end_ms < begin_ms:
            raise ValueError(f"the time range ends ({end_ms}) before it begins ({begin_ms})")
        return cls(frozenset(ids), key or None, begin_ms, end_ms, compile_sql92(sql) if sql else None)

    def matches(self, letter: DeadLetter) -> bool:
        msg = letter.msg
        if self.ids and not self.ids & {letter.original_id, msg.offset_msg_id, msg.msg_id}:
            return False
        if self.key is not None and self.key not in msg.keys:
            return False
        if self.begin_ms is not None and letter.dead_ms < self.begin_ms:
            return False
        if self.end_ms is not None and letter.dead_ms > self.end_ms:
            return False
        return self.sql is None or self.sql.matches(msg.properties)


@dataclass
class ResendReport:
    matched: int = 0
    resent: int = 0
    #: Matched but resent before (by a marker or by the target's index).
    skipped: int = 0
    #: original id -> where its copy went (topic).
    targets: dict[str, str] = field(default_factory=dict)


def dlq_topic(group: str) -> str:
    return names.dlq_topic(group)


def resend_unique_key(group: str, original_id: str) -> str:
    """The UNIQ_KEY of a dead letter's resent copy: the same for every resend of it (32 hex digits)."""
    return hashlib.md5(f"{group}\n{original_id}".encode(), usedforsecurity=False).hexdigest().upper()


async def _read_all(admin: AdminClient, topic: str) -> list[tuple[str, MessageExt]]:
    """(broker name, record) of every record of `topic`, queue by queue, oldest first; [] without a route."""
    try:
        route = await admin.topic_route(topic)
    except BrokerError as exc:
        if exc.code == ResponseCode.TOPIC_NOT_EXIST:
            return []
        raise
    masters = route.master_addrs()
    out: list[tuple[str, MessageExt]] = []
    for mq in route.read_queues(topic):
        addr = masters.get(mq.broker_name)
        if addr is None:
            continue
        end = await admin.max_offset(addr, mq)
        offset = 0
        while offset < end:
            result = await admin.pull(addr, mq, offset, PULL_BATCH)
            if result.status is PullStatus.FOUND and result.messages:
                out.extend((mq.broker_name, m) for m in result.messages)
            elif result.status is not PullStatus.OFFSET_ILLEGAL:
                break
            if result.next_begin_offset <= offset:
                break
            offset = result.next_begin_offset
    return out


def _is_marker(msg: MessageExt) -> bool:
    return mc.ORBITMQ_DLQ_RESENT_MARKER in msg.properties


def _marker_ids(msg: MessageExt) -> set[str]:
    return {line for line in bytes(msg.body).decode("utf-8", errors="replace").splitlines() if line}


async def browse(admin: AdminClient, group: str, selection: Selection | None = None) -> list[DeadLetter]:
    """The group's dead letters (markers left out), oldest first per queue, filtered by `selection`."""
    records = await _read_all(admin, dlq_topic(group))
    resent: set[str] = set()
    for _, msg in records:
        if _is_marker(msg):
            resent |= _marker_ids(msg)
    letters = [
        DeadLetter(msg, broker, resent=False)
        for broker, msg in records if not _is_marker(msg)
    ]
    letters = [DeadLetter(d.msg, d.broker_name, d.original_id in resent) for d in letters]
    if selection is not None:
        letters = [d for d in letters if selection.matches(d)]
    return letters


def resend_properties(group: str, letter: DeadLetter) -> dict[str, str]:
    props = {k: v for k, v in letter.msg.properties.items() if k not in _DROPPED_ON_RESEND}
    props[mc.ORBITMQ_DLQ_ORIGIN] = letter.original_id
    props[mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = resend_unique_key(group, letter.original_id)
    return props


async def _already_in(admin: AdminClient, topic: str, uniq: str) -> bool:
    """True when the index of `topic` on any of its brokers holds a message with this UNIQ_KEY."""
    route = await admin.topic_route(topic)
    for addr in route.master_addrs().values():
        if await admin.query_message(addr, topic, uniq, unique_key=True, max_num=1):
            return True
    return False


async def resend(
    admin: AdminClient, group: str, selection: Selection, *, topic: str | None = None, dry_run: bool = False,
) -> ResendReport:
    """Resend the selected dead letters once each (see the module's note on idempotence)."""
    report = ResendReport()
    letters = await browse(admin, group, selection)
    report.matched = len(letters)
    done: list[tuple[str, str]] = []  # (broker name, original id) resent in this run
    seen: set[str] = set()
    for letter in letters:
        target = topic or letter.original_topic
        if letter.resent or letter.original_id in seen:
            report.skipped += 1
            continue
        seen.add(letter.original_id)
        if await _already_in(admin, target, resend_unique_key(group, letter.original_id)):
            report.skipped += 1
            done.append((letter.broker_name, letter.original_id))
            continue
        report.targets[letter.original_id] = target
        if dry_run:
            report.resent += 1
            continue
        addr, queue = await admin.pick_write_queue(target)
        await admin.send_with_properties(addr, queue, bytes(letter.msg.body), resend_properties(group, letter),
                                         flag=letter.msg.flag)
        report.resent += 1
        done.append((letter.broker_name, letter.original_id))
        if len(done) >= MARKER_IDS_PER_RECORD:
            await _write_markers(admin, group, done)
            done.clear()
    if done and not dry_run:
        await _write_markers(admin, group, done)
    return report


async def _write_markers(admin: AdminClient, group: str, done: list[tuple[str, str]]) -> None:
    """One marker record per DLQ broker listing the ids resent from it."""
    topic = dlq_topic(group)
    route = await admin.topic_route(topic)
    masters = route.master_addrs()
    by_broker: dict[str, list[str]] = {}
    for broker, original_id in done:
        by_broker.setdefault(broker, []).append(original_id)
    for broker, ids in by_broker.items():
        addr = masters.get(broker)
        if addr is None:
            raise ClientError(f"broker {broker} of {topic} has no master; resent ids not recorded: {ids}")
        queue = MessageQueue(topic, broker, 0)
        await admin.send_with_properties(addr, queue, "\n".join(ids).encode(), {mc.ORBITMQ_DLQ_RESENT_MARKER: "1"})


def export_jsonl(letters: Iterable[DeadLetter], out: IO[str]) -> int:
    """Write one JSON object per dead letter; the count written."""
    count = 0
    for letter in letters:
        out.write(json.dumps(letter.to_json(), ensure_ascii=False, sort_keys=True))
        out.write("\n")
        count += 1
    return count
