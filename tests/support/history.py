"""What a fault test's clients did, and the rules it must obey (sans-IO).

Producers record every send with its outcome:
- ACKED: the broker answered SEND_OK (the message must survive);
- FAILED: refused for certain before it was stored (it must never be delivered);
- UNKNOWN: timed out, connection lost, or stored without the replicas' confirmation (either way is fine).
Consumers record every delivery. `check()` then verifies:
- every acknowledged message was consumed at least once (at most `max_lost` may be missing, for
  asynchronous replication where loss is measured, not forbidden);
- nothing was delivered that was never sent, and nothing whose send failed for certain;
- duplicates (deliveries beyond the first) are counted and at most `max_duplicates`;
- with `orderly=True`, per queue: a message of a stream is never delivered while an acknowledged
  message sent before it in the same stream, on the same queue, has not been delivered yet.

Keys are unique per message (the workload puts them in the body or the message key). A stream is a
sequence of sends made one after the other (each awaits the previous acknowledgement), e.g. one
sharding key of an orderly producer; `seq` numbers its sends.

Histories travel as JSON lines (`dump_lines`/`History.load_lines`), so a workload run in another
process or namespace can hand its half back to the test.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from enum import Enum


class Outcome(str, Enum):
    ACKED = "acked"
    FAILED = "failed"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Send:
    key: str
    outcome: Outcome
    queue: str | None = None  # "broker:queueId" the broker stored it in, when known
    stream: str | None = None
    seq: int | None = None
    at: float = 0.0  # when the outcome was known (any clock the caller chooses)
    broker: str | None = None  # the broker address that answered


@dataclass(frozen=True)
class Receive:
    key: str
    queue: str
    consumer: str = ""
    at: float = 0.0


class HistoryViolation(AssertionError):
    """The history breaks a rule; the message lists what and how much."""


@dataclass
class Report:
    acked: int = 0
    failed: int = 0
    unknown: int = 0
    delivered: int = 0  # distinct keys delivered
    deliveries: int = 0  # every delivery, duplicates included
    duplicates: int = 0
    lost: list[str] = field(default_factory=list)
    phantoms: list[str] = field(default_factory=list)
    failed_delivered: list[str] = field(default_factory=list)
    order_violations: list[str] = field(default_factory=list)
    unknown_delivered: int = 0

    def summary(self) -> str:
        return (
            f"acked={self.acked} failed={self.failed} unknown={self.unknown} "
            f"(delivered {self.unknown_delivered}) delivered={self.delivered} deliveries={self.deliveries} "
            f"duplicates={self.duplicates} lost={len(self.lost)} phantoms={len(self.phantoms)} "
            f"failed_delivered={len(self.failed_delivered)} order_violations={len(self.order_violations)}"
        )


class History:
    def __init__(self) -> None:
        self.sends: dict[str, Send] = {}
        self.receives: list[Receive] = []

    # -- recording ---------------------------------------------------------------------------

    def send(
        self,
        key: str,
        outcome: Outcome,
        *,
        queue: str | None = None,
        stream: str | None = None,
        seq: int | None = None,
        at: float = 0.0,
        broker: str | None = None,
    ) -> Send:
        if key in self.sends:
            raise ValueError(f"send {key!r} recorded twice (keys must be unique per message)")
        record = Send(key, Outcome(outcome), queue, stream, seq, at, broker)
        self.sends[key] = record
        return record

    def receive(self, key: str, *, queue: str, consumer: str = "", at: float = 0.0) -> None:
        self.receives.append(Receive(key, queue, consumer, at))

    def merge(self, other: History) -> None:
        for record in other.sends.values():
            if record.key in self.sends:
                raise ValueError(f"send {record.key!r} recorded twice (keys must be unique per message)")
            self.sends[record.key] = record
        self.receives.extend(other.receives)

    # -- transport ---------------------------------------------------------------------------

    def dump_lines(self) -> Iterator[str]:
        for s in self.sends.values():
            yield json.dumps({"send": {**asdict(s), "outcome": s.outcome.value}})
        for r in self.receives:
            yield json.dumps({"receive": asdict(r)})

    @classmethod
    def load_lines(cls, lines: Iterable[str]) -> History:
        history = cls()
        for line in lines:
            if not line.strip():
                continue
            item = json.loads(line)
            if "send" in item:
                fields = item["send"]
                history.send(
                    fields["key"],
                    Outcome(fields["outcome"]),
                    queue=fields.get("queue"),
                    stream=fields.get("stream"),
                    seq=fields.get("seq"),
                    at=fields.get("at", 0.0),
                    broker=fields.get("broker"),
                )
            elif "receive" in item:
                fields = item["receive"]
                history.receive(
                    fields["key"], queue=fields["queue"], consumer=fields.get("consumer", ""), at=fields.get("at", 0.0)
                )
            else:
                raise ValueError(f"not a history line: {line!r}")
        return history

    # -- rules -------------------------------------------------------------------------------

    def acked_keys(self) -> set[str]:
        return {k for k, s in self.sends.items() if s.outcome is Outcome.ACKED}

    def delivered_keys(self) -> set[str]:
        return {r.key for r in self.receives}

    def report(self, *, orderly: bool = False) -> Report:
        report = Report()
        outcomes = Counter(s.outcome for s in self.sends.values())
        report.acked = outcomes[Outcome.ACKED]
        report.failed = outcomes[Outcome.FAILED]
        report.unknown = outcomes[Outcome.UNKNOWN]
        counts = Counter(r.key for r in self.receives)
        report.deliveries = len(self.receives)
        report.delivered = len(counts)
        report.duplicates = sum(n - 1 for n in counts.values())
        for key in sorted(self.acked_keys() - counts.keys()):
            report.lost.append(key)
        for key in sorted(counts):
            sent = self.sends.get(key)
            if sent is None:
                report.phantoms.append(key)
            elif sent.outcome is Outcome.FAILED:
                report.failed_delivered.append(key)
            elif sent.outcome is Outcome.UNKNOWN:
                report.unknown_delivered += 1
        if orderly:
            report.order_violations = self._order_violations()
        return report

    def _order_violations(self) -> list[str]:
        # Per (stream, queue): the acknowledged sends in send order.
        expected: dict[tuple[str, str], list[Send]] = defaultdict(list)
        for s in self.sends.values():
            if s.outcome is Outcome.ACKED and s.stream is not None and s.seq is not None and s.queue is not None:
                expected[(s.stream, s.queue)].append(s)
        for sends in expected.values():
            sends.sort(key=lambda s: s.seq or 0)
        position = {
            s.key: (group, index) for group, sends in expected.items() for index, s in enumerate(sends)
        }
        # Per group, how far the consumers have got without a gap: every acknowledged message before it delivered.
        done: dict[tuple[str, str], set[int]] = defaultdict(set)
        prefix: dict[tuple[str, str], int] = defaultdict(int)  # indexes below it are all delivered
        violations = []
        for r in self.receives:
            where = position.get(r.key)
            if where is None:
                continue
            group, index = where
            if prefix[group] < index:
                earlier = expected[group][prefix[group]].key
                violations.append(
                    f"{r.key} delivered on {r.queue} before {earlier} (sent earlier in stream {group[0]}, acknowledged)"
                )
            seen = done[group]
            seen.add(index)
            while prefix[group] in seen:
                prefix[group] += 1
        return violations

    def check(self, *, max_duplicates: int | None = None, max_lost: int = 0, orderly: bool = False) -> Report:
        """The report, or HistoryViolation naming every rule broken."""
        report = self.report(orderly=orderly)
        problems = []
        if len(report.lost) > max_lost:
            problems.append(f"{len(report.lost)} acknowledged messages never consumed: {report.lost[:10]}")
        if report.phantoms:
            problems.append(f"{len(report.phantoms)} delivered messages were never sent: {report.phantoms[:10]}")
        if report.failed_delivered:
            problems.append(
                f"{len(report.failed_delivered)} messages whose send failed were delivered: {report.failed_delivered[:10]}"
            )
        if max_duplicates is not None and report.duplicates > max_duplicates:
            problems.append(f"{report.duplicates} duplicate deliveries (at most {max_duplicates} allowed)")
        if report.order_violations:
            problems.append(
                f"{len(report.order_violations)} order violations: {report.order_violations[:5]}"
            )
        if problems:
            raise HistoryViolation("; ".join(problems) + f" [{report.summary()}]")
        return report
