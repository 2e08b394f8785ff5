"""The failover controller's decisions against a fake etcd and a fake broker (no I/O)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.failover.controller import FailoverController
from orbitmq.failover.etcd import GroupSnapshot
from orbitmq.failover.model import GroupState, LiveReport, MasterClaim

pytestmark = pytest.mark.timeout(10)


class FakeHost:
    def __init__(self, last_epoch: int, max_offset: int) -> None:
        self._last_epoch, self._max_offset = last_epoch, max_offset
        self.calls: list[tuple[Any, ...]] = []

    def max_offset(self) -> int:
        return self._max_offset

    def last_epoch(self) -> int:
        return self._last_epoch

    def own_addr(self) -> str:
        return "127.0.0.1:10911"

    def own_ha_addr(self) -> str:
        return "127.0.0.1:10912"

    async def become_master(self, epoch: int) -> None:
        self.calls.append(("master", epoch))

    async def become_slave(self, broker_id: int, epoch: int, master_addr: str, master_ha_addr: str) -> None:
        self.calls.append(("slave", broker_id, epoch, master_addr))

    async def stop_replicating(self) -> None:
        self.calls.append(("stop",))

    def set_in_sync(self, broker_ids: tuple[int, ...], own_id: int) -> None:
        self.calls.append(("in_sync", broker_ids))

    def connected_replicas(self) -> set[int] | None:
        return None


class FakeKeys:
    def __init__(self) -> None:
        self.campaigns: list[GroupState] = []

    async def campaign(self, snap: GroupSnapshot, new_state: GroupState, claim: MasterClaim, lease: int) -> bool:
        self.campaigns.append(new_state)
        return True


def controller(host: FakeHost) -> tuple[FailoverController, FakeKeys]:
    config = BrokerConfig(enable_controller_mode=True, etcd_endpoints="127.0.0.1:2379")
    ctl = FailoverController(config, host, clock=lambda: 100.0, client=object())  # type: ignore[arg-type]
    keys = FakeKeys()
    ctl.keys = keys  # type: ignore[assignment]
    ctl.broker_id = 2
    ctl.lease = 7
    return ctl, keys


async def test_a_new_term_is_never_below_the_epoch_the_store_holds() -> None:
    # etcd's data was lost: its state says epoch 1, but this replica's epoch file is at 5.
    host = FakeHost(last_epoch=5, max_offset=1000)
    ctl, keys = controller(host)
    ctl._lost_at = 0.0
    me = LiveReport(2, host.own_addr(), host.own_ha_addr(), 5, 1000, final_for=1)
    snap = GroupSnapshot(revision=9, state=GroupState(1, 1, (1, 2), 3), state_mod=4, lives={2: me})
    await ctl._leaderless(snap, 100.0)
    assert [s.master_epoch for s in keys.campaigns] == [6]
    assert host.calls == [("master", 6)] and ctl.role == "master" and ctl.epoch == 6


async def test_a_replica_that_loses_its_master_stops_copying_and_reports_once() -> None:
    host = FakeHost(last_epoch=3, max_offset=500)
    ctl, keys = controller(host)
    ctl.role, ctl.epoch = "slave", 3
    snap = GroupSnapshot(revision=9, state=GroupState(1, 3, (1, 2), 3), state_mod=4,
                         lives={2: LiveReport(2, "a", "b", 3, 500)})
    assert await ctl._leaderless(snap, 100.0) == 0.0  # publish the final offset before deciding
    assert host.calls == [("stop",)] and ctl._final_for == 3 and not keys.campaigns


async def test_an_etcd_call_cancelled_under_the_caller_is_a_failure_not_a_cancellation() -> None:
    """gRPC cancels calls in flight when their channel closes; that must not stop the caller's loop."""
    from orbitmq.failover.etcd import _bounded

    async def cancelled_inside() -> None:
        raise asyncio.CancelledError

    with pytest.raises(ConnectionError):
        await _bounded(cancelled_inside(), 1.0)

    async def silent() -> None:
        await asyncio.Event().wait()

    with pytest.raises(TimeoutError):
        await _bounded(silent(), 0.05)
