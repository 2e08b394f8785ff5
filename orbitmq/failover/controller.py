"""The async shell of one replica's failover: talks to etcd, applies the model's decisions,
and tells the broker (`ReplicaHost`) to change role.

One task reads the group every controllerReportIntervalMs (and at once when woken),
writes this replica's live report and acts; another renews the lease every TTL/3 and
moves the fencing deadline (model.LeaseClock). `may_write()` is what the broker's send
path asks before it stores a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections import Counter
from collections.abc import Callable
from typing import Protocol

from orbitmq.broker.config import BrokerConfig
from orbitmq.failover.etcd import EtcdClient, EtcdUnavailable, GroupKeys, GroupSnapshot, LeaseGone
from orbitmq.failover.model import (
    GroupState,
    InSyncTracker,
    LeaseClock,
    LiveReport,
    MasterClaim,
    Verdict,
    decide_campaign,
    format_identity,
    next_broker_id,
    parse_identity,
)

log = logging.getLogger("orbitmq.failover")

#: File in storePathRootDir holding the id this replica took from etcd (RocketMQ's name).
IDENTITY_FILE = "brokerIdentity"
#: A planned switchover gives up when the target has not caught up within this long (s).
HANDOVER_TIMEOUT_S = 10.0


class ReplicaHost(Protocol):
    """What the failover controller needs from the broker it runs in."""

    def max_offset(self) -> int: ...

    def last_epoch(self) -> int: ...

    def own_addr(self) -> str: ...

    def own_ha_addr(self) -> str: ...

    async def become_master(self, epoch: int) -> None:
        """Serve writes as the group's master of `epoch` (brokerId 0)."""

    async def become_slave(self, broker_id: int, epoch: int, master_addr: str, master_ha_addr: str) -> None:
        """Copy from the master of `epoch` (empty addresses: none yet) under `broker_id`."""

    async def stop_replicating(self) -> None:
        """Stop copying from the old master, so the max offset no longer moves."""

    def set_in_sync(self, broker_ids: tuple[int, ...], own_id: int) -> None:
        """The master's in-sync set (own id included), which the acknowledgement rule waits for."""

    def connected_replicas(self) -> set[int] | None:
        """Master: ids of the replicas on its HA port, or None when the HA stream does not say."""


def _stopping() -> bool:
    """Whether the running task itself was asked to stop (not a cancellation raised by a callee)."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _read_identity(path: str, cluster: str, broker_name: str) -> int | None:
    try:
        with open(path, encoding="utf-8") as f:
            return parse_identity(f.read(), cluster, broker_name)
    except FileNotFoundError:
        return None


class FailoverController:
    def __init__(self, config: BrokerConfig, host: ReplicaHost, *, clock: Callable[[], float] = time.monotonic,
                 client: EtcdClient | None = None) -> None:
        self.config = config
        self.host = host
        self.clock = clock
        self.client = client or EtcdClient(config.etcd_endpoint_list, timeout_s=min(3.0, config.controller_lease_seconds / 3))
        self.keys = GroupKeys(self.client, config.controller_key_prefix, config.broker_cluster_name, config.broker_name)
        self.broker_id = 0
        #: "none" until the first decision, then "master" or "slave".
        self.role = "none"
        #: The master epoch this replica serves or copies in.
        self.epoch = -1
        self.lease = 0
        self.lease_clock = LeaseClock.for_ttl(config.controller_lease_seconds)
        interval = config.controller_report_interval_ms / 1000
        self.interval_s = interval
        self.tracker = InSyncTracker(config.ha_max_time_slave_not_catchup / 1000, fresh_s=3 * interval)
        #: Failover events by kind (elected, demoted, followed, sss_shrink, sss_expand, fenced, handover...).
        self.events: Counter[str] = Counter()
        self.last: GroupSnapshot | None = None
        self._final_for = -1
        self._lost_at: float | None = None
        self._handover_started: float | None = None
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._fenced_logged = False

    # --- what the broker asks ---------------------------------------------------------

    def may_write(self) -> bool:
        """True while this replica is master, its lease is surely alive, and no handover is under way."""
        ok = self.role == "master" and self._handover_started is None and self.lease_clock.may_write(self.clock())
        if not ok and self.role == "master" and not self._fenced_logged:
            self._fenced_logged = True
            self.events["fenced"] += 1
            log.warning("broker group %s: master lease not confirmed in time or handover under way; writes stop",
                        self.config.broker_name)
        elif ok:
            self._fenced_logged = False
        return ok

    def in_sync_set(self) -> tuple[int, ...]:
        """The in-sync set last read from etcd (ids; the master's own id included)."""
        state = self.last.state if self.last is not None else None
        return state.sss if state is not None else ()

    # --- lifecycle ---------------------------------------------------------------------

    async def prepare(self) -> int:
        """Take an id (persisted in brokerIdentity) and a lease; the id. EtcdUnavailable if etcd does not answer."""
        self.broker_id = await self._identity()
        await self._new_lease()
        log.info("broker group %s: replica id %d in etcd %s", self.config.broker_name, self.broker_id,
                 ";".join(self.client.endpoints))
        return self.broker_id

    def run(self) -> None:
        """Start deciding (after the broker serves as a slave)."""
        self._tasks = [asyncio.ensure_future(self._run()), asyncio.ensure_future(self._keepalive())]

    async def close(self) -> None:
        """Stop; a master revokes its lease so another replica takes over at once."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:  # bounded: a call stuck in the gRPC channel must not hold the shutdown
            await asyncio.wait(self._tasks, timeout=2.0)
        self._tasks = []
        if self.lease:
            with contextlib.suppress(EtcdUnavailable):
                await self.client.revoke(self.lease)
            self.lease = 0
        self.lease_clock.lost()
        await self.client.close()

    def wake(self) -> None:
        self._wake.set()

    # --- identity and lease ----------------------------------------------------------------

    async def _identity(self) -> int:
        config = self.config
        path = os.path.join(config.store.root_dir, IDENTITY_FILE)
        found = _read_identity(path, config.broker_cluster_name, config.broker_name)
        if found is not None:
            return found
        check_code = f"{config.advertised_ip};{os.path.abspath(config.store.root_dir)}"
        while True:
            snap = await self.keys.snapshot()
            for broker_id, code in snap.ids.items():
                if code == check_code:  # taken in an earlier start that did not get to write the file
                    return self._save_identity(path, broker_id)
            candidate = next_broker_id(snap.ids)
            if await self.keys.create_id(candidate, check_code):
                return self._save_identity(path, candidate)

    def _save_identity(self, path: str, broker_id: int) -> int:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(format_identity(self.config.broker_cluster_name, self.config.broker_name, broker_id))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return broker_id

    async def _new_lease(self) -> None:
        sent = self.clock()
        lease, ttl = await self.client.grant(self.config.controller_lease_seconds)
        self.lease = lease
        self.lease_clock.lost()
        self.lease_clock.renewed(sent, ttl)

    async def _keepalive(self) -> None:
        period = self.config.controller_lease_seconds / 3
        while True:
            await asyncio.sleep(period)
            if not self.lease:
                continue
            sent = self.clock()
            try:
                ttl = await self.client.keepalive(self.lease)
            except LeaseGone:
                ttl = 0
            except EtcdUnavailable as exc:
                log.warning("broker group %s: lease renewal failed: %s", self.config.broker_name, exc)
                continue
            except asyncio.CancelledError:
                if _stopping():
                    raise
                continue
            if ttl > 0:
                self.lease_clock.renewed(sent, ttl)
            else:
                log.warning("broker group %s: lease %x expired", self.config.broker_name, self.lease)
                self.lease = 0
                self.lease_clock.lost()
                self.wake()

    # --- the decision loop --------------------------------------------------------------------

    async def _step_down_if_lease_surely_expired(self) -> None:
        """A master that has not heard from etcd past its lease's latest possible end knows its
        key is gone: it steps down on its own (stops registering as brokerId 0) without waiting
        to reach etcd again."""
        clock = self.lease_clock
        if self.role != "master" or self.clock() < clock.deadline + 2 * clock.margin_s:
            return
        log.warning("broker group %s: no lease renewal for longer than the lease; stepping down",
                    self.config.broker_name)
        self.events["lease_lost"] += 1
        self.role = "slave"
        self._lost_at = None
        await self.host.become_slave(self.broker_id, self.epoch, "", "")

    async def _run(self) -> None:
        while True:
            timeout = self.interval_s
            try:
                await self._step_down_if_lease_surely_expired()
                timeout = await self.round()
            except LeaseGone:
                log.warning("broker group %s: lease %x expired; taking a new one", self.config.broker_name, self.lease)
                self.lease = 0
                self.lease_clock.lost()
                timeout = 0.0
            except EtcdUnavailable as exc:
                log.warning("broker group %s: etcd: %s", self.config.broker_name, exc)
            except Exception:  # one failed round must not end failover for good
                log.exception("broker group %s: failover round failed", self.config.broker_name)
            except asyncio.CancelledError:
                if _stopping():
                    raise
                # A cancellation that is not ours (raised out of a library call) must not end the loop.
                log.warning("broker group %s: a failover round was cancelled from inside", self.config.broker_name)
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.01, timeout))

    def _report(self) -> LiveReport:
        host = self.host
        return LiveReport(
            self.broker_id, host.own_addr(), host.own_ha_addr(), host.last_epoch(), host.max_offset(),
            self.config.broker_election_priority, self._final_for,
            self.epoch if self.role in ("master", "slave") and self._lost_at is None else -1,
        )

    async def round(self) -> float:
        """One read-decide-act step; returns how long to wait before the next."""
        if not self.lease:
            await self._new_lease()
        report = self._report()
        await self.keys.put_live(report, self.lease)
        snap = await self.keys.snapshot()
        self.last = snap
        now = self.clock()
        me = self.broker_id
        master = snap.master
        if master is not None and master.broker_id == me and snap.master_lease == self.lease:
            if self.role != "master" or self.epoch != master.master_epoch:
                how = "reelected" if self.epoch == master.master_epoch else "handover" if self.role == "slave" else "elected"
                await self._promote(master.master_epoch, how)
            return await self._master_round(snap, now)
        if master is not None and master.broker_id == me:
            # Our own claim from an earlier life (restarted within the lease): clear it and elect afresh.
            log.info("broker group %s: removing the master key of this replica's previous run", self.config.broker_name)
            await self.keys.delete_master(snap.master_create)
            return 0.0
        if master is not None:
            if self.role != "slave" or self.epoch != master.master_epoch:
                await self._follow(master)
            return self.interval_s
        return await self._leaderless(snap, now)

    async def _promote(self, epoch: int, how: str) -> None:
        previous = self.epoch
        self.role = "master"
        self.epoch = epoch
        self._lost_at = None
        self._final_for = -1
        self._handover_started = None
        self.events[how] += 1
        log.warning("broker group %s: replica %d is master of epoch %d (was epoch %d; %s)",
                    self.config.broker_name, self.broker_id, epoch, previous, how)
        await self.host.become_master(epoch)

    async def _follow(self, master: MasterClaim) -> None:
        was = self.role
        self.role = "slave"
        self.epoch = master.master_epoch
        self._lost_at = None
        self._final_for = -1
        self._handover_started = None
        self.events["demoted" if was == "master" else "followed"] += 1
        log.warning("broker group %s: replica %d follows master %d (%s) of epoch %d%s", self.config.broker_name,
                    self.broker_id, master.broker_id, master.addr, master.master_epoch,
                    " (demoted)" if was == "master" else "")
        await self.host.become_slave(self.broker_id, master.master_epoch, master.addr, master.ha_addr)

    async def _leaderless(self, snap: GroupSnapshot, now: float) -> float:
        if self._lost_at is None:
            self._lost_at = now
            if self.role == "master":
                log.warning("broker group %s: this master's key is gone (lease lost); stepping down",
                            self.config.broker_name)
                self.events["lease_lost"] += 1
                self.lease_clock.lost()
                self.role = "slave"
                await self.host.become_slave(self.broker_id, self.epoch, "", "")
            else:
                await self.host.stop_replicating()
            self._final_for = snap.state.master_epoch if snap.state is not None else 0
            log.info("broker group %s: no master; replica %d stops copying at offset %d", self.config.broker_name,
                     self.broker_id, self.host.max_offset())
            return 0.0  # publish the final offset at once
        decision = decide_campaign(
            self.broker_id, snap.state, snap.lives, now=now, lost_at=self._lost_at,
            settle_s=2 * self.interval_s + 0.2, step_s=max(0.3, self.interval_s),
            allow_unclean=self.config.enable_elect_unclean_master,
        )
        if decision.verdict is Verdict.WAIT:
            return max(0.0, min(self.interval_s, decision.until - now))
        if decision.verdict is Verdict.INELIGIBLE:
            return self.interval_s
        base = snap.state or GroupState()
        # Never below an epoch this store already holds (etcd's data lost or replaced, say).
        base = dataclasses.replace(base, master_epoch=max(base.master_epoch, self.host.last_epoch()))
        new_state = base.elected(self.broker_id, self.host.own_addr(), self.host.own_ha_addr())
        claim = MasterClaim(self.broker_id, new_state.master_epoch, new_state.master_addr, new_state.master_ha_addr)
        if await self.keys.campaign(snap, new_state, claim, self.lease):
            log.info("broker group %s: replica %d won the election of epoch %d (%s)", self.config.broker_name,
                     self.broker_id, new_state.master_epoch, decision.reason)
            await self._promote(new_state.master_epoch, "elected")
        return 0.0

    async def _master_round(self, snap: GroupSnapshot, now: float) -> float:
        state = snap.state
        if state is None or state.master_id != self.broker_id:
            return self.interval_s
        own = self.host.max_offset()
        tracker = self.tracker
        tracker.sample(now, own)
        for broker_id, report in snap.lives.items():
            if broker_id != self.broker_id and report.following == self.epoch:
                tracker.report(broker_id, report.max_offset)
        request = snap.handover
        if request is not None and request.master_epoch == self.epoch and request.target != self.broker_id:
            return await self._hand_over(snap, state, request.target, now)
        if self._handover_started is not None:
            self._handover_started = None  # request withdrawn
        desired = tracker.desired(now, self.broker_id, self.epoch, state.sss, snap.lives, self.host.connected_replicas())
        if desired == state.sss:
            self.host.set_in_sync(state.sss, self.broker_id)
            return self.interval_s
        # While the change is pending, acks wait for the union of both sets (RocketMQ 5's rule):
        # whatever etcd ends up holding, every acknowledged message is on all its members.
        self.host.set_in_sync(tuple(sorted(set(desired) | set(state.sss))), self.broker_id)
        if await self.keys.alter_sss(snap, state.with_sss(desired)):
            self.host.set_in_sync(desired, self.broker_id)
            grown = set(desired) - set(state.sss)
            self.events["sss_expand" if grown else "sss_shrink"] += 1
            log.warning("broker group %s: in-sync set %s -> %s (epoch %d)", self.config.broker_name,
                        list(state.sss), list(desired), self.epoch)
        return self.interval_s

    async def _hand_over(self, snap: GroupSnapshot, state: GroupState, target: int, now: float) -> float:
        name = self.config.broker_name
        report = snap.lives.get(target)
        if self._handover_started is None:
            self._handover_started = now  # writes stop from here (may_write)
            log.warning("broker group %s: handing the master role to replica %d; writes stop", name, target)
        if report is None or now - self._handover_started > HANDOVER_TIMEOUT_S:
            log.warning("broker group %s: handover to replica %d abandoned (%s)", name, target,
                        "not alive" if report is None else "did not catch up in time")
            self.events["handover_abandoned"] += 1
            await self.keys.cancel_handover(snap.handover_mod)
            self._handover_started = None
            return self.interval_s
        if report.following != self.epoch or report.max_offset < self.host.max_offset():
            return min(self.interval_s, 0.1)
        new_state = GroupState(target, self.epoch + 1, (target,), state.sss_epoch + 1, report.addr, report.ha_addr)
        claim = MasterClaim(target, new_state.master_epoch, report.addr, report.ha_addr)
        if await self.keys.hand_over(snap, new_state, claim, snap.live_leases.get(target, 0)):
            self.events["handed_over"] += 1
            log.warning("broker group %s: replica %d handed the master role to %d (epoch %d)", name,
                        self.broker_id, target, new_state.master_epoch)
            await self._follow(claim)
        return 0.0
