"""The in-sync replica set and the acknowledgement rule (controller mode and SYNC_MASTER).

`InSyncSet` is the object failover coordination sets (RocketMQ 5's SyncStateSet,
Kafka's ISR): the broker ids of the slaves known to hold everything the
master confirmed; the master itself is not listed. `None` members means
"every connected slave", which is what a RocketMQ 4.x SYNC_MASTER waits for.

`required_offset` is the pure rule: given each slave's acknowledged offset,
how far the CommitLog is held by enough replicas for a put to be
acknowledged (the confirm offset of the group):

* allAck (`allAckInSyncStateSet`): every member of the in-sync set; a member
  that is not connected keeps its last ack, so puts wait (and time out) until
  coordination drops it from the set. An empty set: the master alone.
* otherwise `inSyncReplicas - 1` slaves, any connected ones (controller mode),
  or at least one connected slave (4.x SYNC_MASTER without controller mode).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(slots=True)
class ReplicaState:
    """What the master knows of one slave connection."""

    #: The slave's broker id (controller mode handshake); 4.x slaves get negative stand-ins.
    broker_id: int
    peer: str
    #: Highest CommitLog offset it acknowledged.
    acked: int = 0
    connected: bool = True
    #: Monotonic seconds when it last held everything the master had at the previous transfer.
    caught_up_at: float = 0.0
    #: Never joins the in-sync set (the handshake's isAsyncLearner).
    learner: bool = False


class InSyncSet:
    """The slaves whose acks count (see the module docstring); settable by coordination."""

    def __init__(self, members: Iterable[int] | None = None) -> None:
        self._members: frozenset[int] | None = None if members is None else frozenset(members)
        self._listeners: list[Callable[[], None]] = []

    @property
    def members(self) -> frozenset[int] | None:
        return self._members

    def set(self, members: Iterable[int] | None) -> None:
        """Replace the members (broker ids of slaves; None: every connected slave)."""
        new = None if members is None else frozenset(members)
        if new == self._members:
            return
        self._members = new
        for listener in list(self._listeners):
            listener()

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def __repr__(self) -> str:
        return f"InSyncSet({'all connected' if self._members is None else sorted(self._members)})"


def required_offset(
    replicas: Iterable[ReplicaState],
    members: frozenset[int] | None,
    max_offset: int,
    *,
    controller_mode: bool,
    all_ack: bool,
    in_sync_replicas: int,
) -> int:
    """The CommitLog offset below which a put has the copies it needs (never above `max_offset`)."""
    states = list(replicas)
    if all_ack and members is not None:
        if not members:
            return max_offset
        acked = {m: 0 for m in members}
        for r in states:
            if r.broker_id in acked:
                acked[r.broker_id] = max(acked[r.broker_id], r.acked)
        return min(max_offset, *acked.values())
    candidates = [r for r in states if r.connected and (members is None or r.broker_id in members or not all_ack)]
    if all_ack:  # members None: every connected slave
        if not candidates:
            return 0 if not controller_mode else max_offset
        return min(max_offset, *(r.acked for r in candidates))
    need = in_sync_replicas - 1 if controller_mode else max(1, in_sync_replicas - 1)
    if need <= 0:
        return max_offset
    acks = sorted((r.acked for r in candidates), reverse=True)
    if len(acks) < need:
        return 0
    return min(max_offset, acks[need - 1])


def enough_replicas(
    replicas: Iterable[ReplicaState], members: frozenset[int] | None, *, controller_mode: bool,
    min_in_sync_replicas: int,
) -> bool:
    """minInSyncReplicas: the master plus the in-sync (connected) slaves are enough to accept writes."""
    if not controller_mode:
        return True
    if members is not None:
        count = 1 + len(members)
    else:
        count = 1 + sum(1 for r in replicas if r.connected and not r.learner)
    return count >= min_in_sync_replicas
