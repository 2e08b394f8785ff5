"""The sans-IO core of automatic failover: the values kept in etcd and the decisions taken on them.

Nothing here does I/O or reads a clock: callers pass `now` (monotonic seconds) and what
they read from etcd, and get back what to do. `controller.py` is the async shell that
reads and writes etcd and calls the broker.

Keys under `<prefix>/<cluster>/<brokerName>/` (docs/failover.md):

* `ids/<id>`   a replica's id, created once with CREATE==0 (ids start at 1)
* `live/<id>`  a `LiveReport`, attached to the replica's lease, rewritten every report interval
* `state`      the `GroupState`; every write compares its MOD revision (CAS)
* `master`     a `MasterClaim`, attached to the master's lease; its create revision names the term
* `handover`   an admin's request for a planned switchover (`Handover`)
"""

from __future__ import annotations

import enum
import json
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: Priority of a replica that did not set brokerElectionPriority (lower wins a tie).
DEFAULT_PRIORITY = 2**31 - 1


def group_prefix(root: str, cluster: str, broker_name: str) -> str:
    return f"{root.rstrip('/')}/{cluster}/{broker_name}/"


def _loads(raw: bytes | str) -> dict[str, Any]:
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")  # noqa: TRY004 - callers treat every bad value alike
    return obj


def _dumps(obj: Mapping[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), sort_keys=True).encode()


@dataclass(frozen=True)
class GroupState:
    """`state`: who is master in which epoch, and the in-sync replica set (RocketMQ's SyncStateInfo)."""

    master_id: int = 0
    master_epoch: int = 0
    sss: tuple[int, ...] = ()
    sss_epoch: int = 0
    master_addr: str = ""
    master_ha_addr: str = ""

    def to_bytes(self) -> bytes:
        return _dumps({
            "masterId": self.master_id, "masterEpoch": self.master_epoch, "sss": list(self.sss),
            "sssEpoch": self.sss_epoch, "masterAddr": self.master_addr, "masterHaAddr": self.master_ha_addr,
        })

    @classmethod
    def from_bytes(cls, raw: bytes | str) -> GroupState:
        obj = _loads(raw)
        try:
            return cls(
                master_id=int(obj.get("masterId", 0)), master_epoch=int(obj.get("masterEpoch", 0)),
                sss=tuple(sorted(int(i) for i in obj.get("sss", []))), sss_epoch=int(obj.get("sssEpoch", 0)),
                master_addr=str(obj.get("masterAddr", "")), master_ha_addr=str(obj.get("masterHaAddr", "")),
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad group state: {exc}") from None

    def elected(self, broker_id: int, addr: str, ha_addr: str) -> GroupState:
        """The state after `broker_id` wins an election: next epoch, in-sync set of itself alone."""
        return GroupState(broker_id, self.master_epoch + 1, (broker_id,), self.sss_epoch + 1, addr, ha_addr)

    def with_sss(self, sss: Iterable[int]) -> GroupState:
        return GroupState(self.master_id, self.master_epoch, tuple(sorted(set(sss))), self.sss_epoch + 1,
                          self.master_addr, self.master_ha_addr)


@dataclass(frozen=True)
class MasterClaim:
    """`master`: held under the master's lease; gone when the lease ends."""

    broker_id: int
    master_epoch: int
    addr: str
    ha_addr: str

    def to_bytes(self) -> bytes:
        return _dumps({"brokerId": self.broker_id, "masterEpoch": self.master_epoch, "addr": self.addr,
                       "haAddr": self.ha_addr})

    @classmethod
    def from_bytes(cls, raw: bytes | str) -> MasterClaim:
        obj = _loads(raw)
        try:
            return cls(int(obj["brokerId"]), int(obj["masterEpoch"]), str(obj.get("addr", "")),
                       str(obj.get("haAddr", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad master claim: {exc}") from None


@dataclass(frozen=True)
class LiveReport:
    """`live/<id>`: a replica's heartbeat. `final_for` is the master epoch whose master this
    replica stopped copying from (its `max_offset` no longer moves), -1 while it copies or serves."""

    broker_id: int
    addr: str
    ha_addr: str
    last_epoch: int
    max_offset: int
    priority: int = DEFAULT_PRIORITY
    final_for: int = -1
    #: The master epoch this replica serves (as master) or copies (as slave) in; -1 none.
    following: int = -1

    def to_bytes(self) -> bytes:
        return _dumps({
            "brokerId": self.broker_id, "addr": self.addr, "haAddr": self.ha_addr, "lastEpoch": self.last_epoch,
            "maxOffset": self.max_offset, "priority": self.priority, "finalFor": self.final_for,
            "following": self.following,
        })

    @classmethod
    def from_bytes(cls, raw: bytes | str) -> LiveReport:
        obj = _loads(raw)
        try:
            return cls(
                int(obj["brokerId"]), str(obj.get("addr", "")), str(obj.get("haAddr", "")),
                int(obj.get("lastEpoch", 0)), int(obj.get("maxOffset", 0)),
                int(obj.get("priority", DEFAULT_PRIORITY)), int(obj.get("finalFor", -1)),
                int(obj.get("following", -1)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad live report: {exc}") from None


@dataclass(frozen=True)
class Handover:
    """`handover`: hand the master role of `master_epoch` to `target` (admin electMaster)."""

    target: int
    master_epoch: int

    def to_bytes(self) -> bytes:
        return _dumps({"target": self.target, "masterEpoch": self.master_epoch})

    @classmethod
    def from_bytes(cls, raw: bytes | str) -> Handover:
        obj = _loads(raw)
        try:
            return cls(int(obj["target"]), int(obj["masterEpoch"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"bad handover request: {exc}") from None


def rank_key(report: LiveReport) -> tuple[int, int, int, int]:
    """Best first: newest epoch, then most data, then lowest priority, then lowest id."""
    return (-report.last_epoch, -report.max_offset, report.priority, report.broker_id)


class Verdict(enum.Enum):
    CAMPAIGN = "campaign"
    WAIT = "wait"
    INELIGIBLE = "ineligible"


@dataclass(frozen=True)
class CampaignDecision:
    verdict: Verdict
    #: With WAIT: decide again at this time (or sooner when something changes).
    until: float = 0.0
    reason: str = ""


def decide_campaign(
    me: int,
    state: GroupState | None,
    lives: Mapping[int, LiveReport],
    *,
    now: float,
    lost_at: float,
    settle_s: float,
    step_s: float,
    allow_unclean: bool = False,
) -> CampaignDecision:
    """Whether replica `me` should try to become master now that the group has none.

    Candidates are the live members of the in-sync set (every live replica for the first
    election of a group, or with unclean election when no member lives). They are ranked by
    `rank_key` once each has reported its final offset for the lost master's epoch (or
    `settle_s` after the loss was seen, counting only those that did); the one ranked `r`
    campaigns `r * step_s` after that point, so the best wins and a silent best is passed over.
    """
    if me not in lives:
        return CampaignDecision(Verdict.WAIT, now + step_s, "own live report not yet visible")
    if state is None:
        candidates = dict(lives)
        lost_epoch = 0
    else:
        lost_epoch = state.master_epoch
        candidates = {i: r for i, r in lives.items() if i in state.sss}
        if not candidates and allow_unclean:
            candidates = dict(lives)
        if me not in candidates:
            return CampaignDecision(Verdict.INELIGIBLE, reason="not in the in-sync set")
    final = {i: r for i, r in candidates.items() if state is None or r.final_for >= lost_epoch}
    settled_at = lost_at + settle_s
    if len(final) < len(candidates):
        if now < settled_at:
            return CampaignDecision(Verdict.WAIT, settled_at, "waiting for the candidates' final offsets")
        start = settled_at
    else:
        start = lost_at
    if me not in final:
        return CampaignDecision(Verdict.WAIT, now + step_s, "own final offset not yet visible")
    ranked = sorted(final.values(), key=rank_key)
    rank = [r.broker_id for r in ranked].index(me)
    at = start + rank * step_s
    if now >= at:
        return CampaignDecision(Verdict.CAMPAIGN, reason=f"ranked {rank + 1} of {len(ranked)}")
    return CampaignDecision(Verdict.WAIT, at, f"ranked {rank + 1} of {len(ranked)}")


@dataclass
class LeaseClock:
    """The master's fencing deadline. Each successful renewal sent at `sent_at` proves the lease
    lives until at least `sent_at + ttl` (etcd counts from when it handled the renewal, later
    than the send); the master stops writing `margin_s` before that."""

    ttl_s: float
    margin_s: float
    deadline: float = float("-inf")

    @classmethod
    def for_ttl(cls, ttl_s: float) -> LeaseClock:
        return cls(ttl_s, max(1.0, ttl_s / 5))

    def renewed(self, sent_at: float, granted_ttl_s: float) -> None:
        if granted_ttl_s <= 0:
            return
        self.deadline = max(self.deadline, sent_at + min(granted_ttl_s, self.ttl_s) - self.margin_s)

    def lost(self) -> None:
        self.deadline = float("-inf")

    def may_write(self, now: float) -> bool:
        return now < self.deadline


@dataclass
class _Member:
    caught_up_at: float = float("-inf")
    reported_offset: int = -1


@dataclass
class InSyncTracker:
    """The master's view of which replicas keep up (RocketMQ's haMaxTimeSlaveNotCatchup rule).

    The master samples its own max offset over time; a replica whose reported offset reached
    the master's offset of time t was caught up at t. A member not caught up for `max_lag_s`,
    or without a live report, leaves the set; a replica of the current epoch whose report
    reached the master's offset of its report time (within `fresh_s`) joins it."""

    max_lag_s: float
    fresh_s: float
    _samples: deque[tuple[float, int]] = field(default_factory=deque)
    _members: dict[int, _Member] = field(default_factory=dict)

    def sample(self, now: float, own_max_offset: int) -> None:
        samples = self._samples
        if samples and samples[-1][1] == own_max_offset:
            samples[-1] = (now, own_max_offset)  # still the same offset: caught up to it at `now` too
        else:
            samples.append((now, own_max_offset))
        while len(samples) > 1 and samples[1][0] < now - self.max_lag_s - self.fresh_s:
            samples.popleft()

    def _caught_up_time(self, offset: int) -> float:
        best = float("-inf")
        for at, master_offset in self._samples:
            if master_offset <= offset:
                best = at
        return best

    def report(self, broker_id: int, offset: int) -> None:
        member = self._members.setdefault(broker_id, _Member())
        member.reported_offset = offset
        member.caught_up_at = max(member.caught_up_at, self._caught_up_time(offset))

    def forget(self, broker_id: int) -> None:
        self._members.pop(broker_id, None)

    def desired(self, now: float, master_id: int, master_epoch: int, current: Iterable[int],
                lives: Mapping[int, LiveReport], connected: Iterable[int] | None = None) -> tuple[int, ...]:
        """The in-sync set the master should commit: itself, members still within bounds, and
        replicas of this epoch that just caught up. `connected`, when the master knows it, lists
        the replicas on its HA port: one not connected neither joins nor stays."""
        current_set = set(current)
        connected_set = None if connected is None else set(connected)
        result = {master_id}
        for broker_id, report in lives.items():
            if broker_id == master_id:
                continue
            if report.following != master_epoch:
                continue
            if connected_set is not None and broker_id not in connected_set:
                continue
            member = self._members.get(broker_id)
            if member is None:
                continue
            if broker_id in current_set:
                if now - member.caught_up_at <= self.max_lag_s:
                    result.add(broker_id)
            elif now - member.caught_up_at <= self.fresh_s:
                result.add(broker_id)
        for gone in set(self._members) - set(lives):
            self.forget(gone)
        return tuple(sorted(result))

    def caught_up_now(self, broker_id: int, own_max_offset: int) -> bool:
        member = self._members.get(broker_id)
        return member is not None and member.reported_offset >= own_max_offset


def next_broker_id(existing: Iterable[int]) -> int:
    """The id to try creating under `ids/`: one past the highest (ids start at 1)."""
    return max((i for i in existing if i > 0), default=0) + 1


def parse_identity(text: str, cluster: str, broker_name: str) -> int | None:
    """The id in a brokerIdentity file (`cluster#brokerName#id`); None when it names another group."""
    parts = text.strip().split("#")
    if len(parts) != 3 or parts[0] != cluster or parts[1] != broker_name or not parts[2].isdigit():
        return None
    return int(parts[2]) if int(parts[2]) > 0 else None


def format_identity(cluster: str, broker_name: str, broker_id: int) -> str:
    return f"{cluster}#{broker_name}#{broker_id}\n"
