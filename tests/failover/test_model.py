"""The sans-IO failover core: values, election ranking, fencing clock, in-sync set."""

from __future__ import annotations

import pytest

from orbitmq.failover.model import (
    GroupState,
    InSyncTracker,
    LeaseClock,
    LiveReport,
    MasterClaim,
    Verdict,
    decide_campaign,
    next_broker_id,
    parse_identity,
)

pytestmark = pytest.mark.timeout(10)


def live(broker_id: int, offset: int, *, epoch: int = 1, final_for: int = -1, priority: int = 5,
         following: int = -1) -> LiveReport:
    return LiveReport(broker_id, f"127.0.0.1:{10000 + broker_id}", f"127.0.0.1:{20000 + broker_id}", epoch, offset,
                      priority, final_for, following)


def test_values_round_trip() -> None:
    state = GroupState(2, 7, (3, 2), 9, "a:1", "a:2")
    assert GroupState.from_bytes(state.to_bytes()) == GroupState(2, 7, (2, 3), 9, "a:1", "a:2")
    claim = MasterClaim(2, 7, "a:1", "a:2")
    assert MasterClaim.from_bytes(claim.to_bytes()) == claim
    report = live(4, 1234, final_for=3)
    assert LiveReport.from_bytes(report.to_bytes()) == report
    for bad in (b"", b"[]", b"{\"brokerId\": \"x\"}", b"\xff"):
        with pytest.raises(ValueError):
            LiveReport.from_bytes(bad)


def test_election_moves_epoch_and_resets_sss() -> None:
    state = GroupState(1, 3, (1, 2, 3), 5, "m:1", "m:2")
    won = state.elected(2, "b:1", "b:2")
    assert (won.master_id, won.master_epoch, won.sss, won.sss_epoch) == (2, 4, (2,), 6)
    assert state.with_sss([3, 1]).sss == (1, 3) and state.with_sss([1]).sss_epoch == 6


def test_first_election_any_live_replica_best_ranked_first() -> None:
    lives = {1: live(1, 0), 2: live(2, 0)}
    best = decide_campaign(1, None, lives, now=0.0, lost_at=0.0, settle_s=1.0, step_s=0.5)
    other = decide_campaign(2, None, lives, now=0.0, lost_at=0.0, settle_s=1.0, step_s=0.5)
    assert best.verdict is Verdict.CAMPAIGN
    assert other.verdict is Verdict.WAIT and other.until == 0.5


def test_only_in_sync_members_campaign_and_most_data_wins() -> None:
    state = GroupState(1, 4, (1, 2, 3), 5)
    lives = {2: live(2, 900, final_for=4, epoch=4), 3: live(3, 1000, final_for=4, epoch=4),
             4: live(4, 5000, final_for=4, epoch=4)}
    assert decide_campaign(4, state, lives, now=0, lost_at=0, settle_s=1, step_s=0.5).verdict is Verdict.INELIGIBLE
    assert decide_campaign(3, state, lives, now=0, lost_at=0, settle_s=1, step_s=0.5).verdict is Verdict.CAMPAIGN
    second = decide_campaign(2, state, lives, now=0, lost_at=0, settle_s=1, step_s=0.5)
    assert second.verdict is Verdict.WAIT
    # The best one never ran its transaction: the second campaigns one step later.
    assert decide_campaign(2, state, lives, now=0.5, lost_at=0, settle_s=1, step_s=0.5).verdict is Verdict.CAMPAIGN


def test_newer_epoch_beats_more_data_then_priority() -> None:
    state = GroupState(1, 4, (2, 3), 5)
    lives = {2: live(2, 9000, epoch=3, final_for=4), 3: live(3, 100, epoch=4, final_for=4)}
    assert decide_campaign(3, state, lives, now=0, lost_at=0, settle_s=1, step_s=0.5).verdict is Verdict.CAMPAIGN
    tie = {2: live(2, 100, epoch=4, final_for=4, priority=1), 3: live(3, 100, epoch=4, final_for=4, priority=2)}
    assert decide_campaign(2, state, tie, now=0, lost_at=0, settle_s=1, step_s=0.5).verdict is Verdict.CAMPAIGN
    assert decide_campaign(3, state, tie, now=0, lost_at=0, settle_s=1, step_s=0.5).verdict is Verdict.WAIT


def test_waits_for_final_offsets_until_settled() -> None:
    state = GroupState(1, 4, (2, 3), 5)
    # 3 has more data but has not reported its final offset: 2 must not run ahead of it.
    lives = {2: live(2, 100, epoch=4, final_for=4), 3: live(3, 500, epoch=4)}
    early = decide_campaign(2, state, lives, now=0.2, lost_at=0, settle_s=1, step_s=0.5)
    assert early.verdict is Verdict.WAIT and early.until == 1
    # Settled without 3's report: 2 is the only one ranked.
    assert decide_campaign(2, state, lives, now=1.0, lost_at=0, settle_s=1, step_s=0.5).verdict is Verdict.CAMPAIGN


def test_unclean_election_only_when_allowed_and_no_member_lives() -> None:
    state = GroupState(1, 4, (1,), 5)
    lives = {3: live(3, 10, final_for=4)}
    assert decide_campaign(3, state, lives, now=0, lost_at=0, settle_s=1, step_s=0.5).verdict is Verdict.INELIGIBLE
    allowed = decide_campaign(3, state, lives, now=0, lost_at=0, settle_s=1, step_s=0.5, allow_unclean=True)
    assert allowed.verdict is Verdict.CAMPAIGN


def test_lease_clock_counts_from_send_time_minus_margin() -> None:
    clock = LeaseClock.for_ttl(10)
    assert clock.margin_s == 2 and not clock.may_write(0)
    clock.renewed(sent_at=100.0, granted_ttl_s=10)
    assert clock.may_write(107.9) and not clock.may_write(108.0)
    clock.renewed(sent_at=90.0, granted_ttl_s=10)  # an older renewal answered late never moves it back
    assert clock.deadline == 108.0
    clock.renewed(sent_at=104.0, granted_ttl_s=0)  # the lease is gone: no extension
    assert clock.deadline == 108.0
    assert LeaseClock.for_ttl(3).margin_s == 1.0
    clock.lost()
    assert not clock.may_write(100.0)


def test_in_sync_set_shrinks_on_lag_and_grows_on_catch_up() -> None:
    tracker = InSyncTracker(max_lag_s=5.0, fresh_s=1.0)
    lives = {1: live(1, 0, following=2), 2: live(2, 0, following=2), 3: live(3, 0, following=2)}
    tracker.sample(0.0, 100)
    tracker.report(2, 100)
    tracker.report(3, 50)
    assert tracker.desired(0.5, 1, 2, (1,), lives) == (1, 2)  # 2 caught up: joins; 3 behind: stays out
    tracker.sample(1.0, 300)
    tracker.report(2, 100)
    tracker.report(3, 300)
    assert tracker.desired(1.5, 1, 2, (1, 2), lives) == (1, 2, 3)
    for t in (2.0, 4.0, 6.0, 7.0):  # the master writes on; 2 stays at 100 (caught up last at 0.0)
        tracker.sample(t, 300 + int(t * 100))
        tracker.report(3, 300 + int(t * 100))
        tracker.report(2, 100)
    assert tracker.desired(7.0, 1, 2, (1, 2, 3), lives) == (1, 3)
    # A replica of another epoch, or without a live key, never counts.
    other = {1: lives[1], 3: live(3, 10_000, following=1)}
    assert tracker.desired(7.0, 1, 2, (1, 3), other) == (1,)


def test_identity_file_and_next_id() -> None:
    assert parse_identity("C#b#3\n", "C", "b") == 3
    assert parse_identity("C#other#3", "C", "b") is None
    assert parse_identity("C#b#0", "C", "b") is None
    assert next_broker_id([]) == 1 and next_broker_id([1, 4]) == 5


def test_a_replica_not_on_the_masters_ha_port_neither_joins_nor_stays() -> None:
    tracker = InSyncTracker(max_lag_s=5.0, fresh_s=1.0)
    lives = {1: live(1, 0, following=2), 2: live(2, 0, following=2), 3: live(3, 0, following=2)}
    tracker.sample(0.0, 100)
    tracker.report(2, 100)
    tracker.report(3, 100)
    assert tracker.desired(0.5, 1, 2, (1,), lives, connected={2}) == (1, 2)
    assert tracker.desired(0.5, 1, 2, (1, 2, 3), lives, connected={3}) == (1, 3)
    assert tracker.desired(0.5, 1, 2, (1,), lives, connected=None) == (1, 2, 3)
