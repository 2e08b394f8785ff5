"""The timer index and its checkpoint rule, without a store: no timer is lost across a crash."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.broker.timer.index import TimerCheckpoint, TimerEntry, TimerIndex
from orbitmq.broker.timer.props import TimerPropertyError, delivery_time


def entries_for(times: list[int]) -> list[TimerEntry]:
    return [TimerEntry(t, i, i * 100, 100) for i, t in enumerate(times)]


def test_due_timers_come_out_earliest_first_whatever_their_arrival_order() -> None:
    index = TimerIndex(TimerCheckpoint())
    for entry in entries_for([50, 10, 30, 10, 40]):
        index.load(entry)
    due = index.pop_due(35, 10)
    assert [(e.deliver_ms, e.queue_offset) for e in due] == [(10, 1), (10, 3), (30, 2)]
    index.done(due)
    assert index.next_due_ms() == 40
    assert index.low_offset == 0  # offset 0 (due at 50) still waits


def test_the_checkpoint_never_claims_a_pending_timer() -> None:
    index = TimerIndex(TimerCheckpoint(low_offset=0, scan_offset=0, delivered_ms=1_000))
    index.load(TimerEntry(500, 0, 0, 10))  # loaded after a restart, due before the saved time
    index.mark_delivered_until(2_000)
    checkpoint = index.checkpoint()
    assert not checkpoint.already_delivered(0, 500)
    assert checkpoint.low_offset == 0


def test_timer_properties_resolve_to_a_delivery_time_and_refuse_what_is_not_one() -> None:
    assert delivery_time({"TIMER_DELIVER_MS": "5000"}, 1000, 10_000) == 5000
    assert delivery_time({"TIMER_DELAY_SEC": "3"}, 1000, 10_000) == 4000
    assert delivery_time({"TIMER_DELAY_MS": "250"}, 1000, 10_000) == 1250
    assert delivery_time({"OTHER": "1"}, 1000, 10_000) is None
    for bad in ({"TIMER_DELAY_MS": "soon"}, {"TIMER_DELAY_SEC": "-1"}, {"TIMER_DELIVER_MS": "99999"}):
        try:
            delivery_time(bad, 1000, 10_000)
        except TimerPropertyError:
            continue
        raise AssertionError(f"{bad} was accepted")


@settings(max_examples=200, deadline=None)
@given(
    times=st.lists(st.integers(0, 100), min_size=1, max_size=40),
    steps=st.lists(st.tuples(st.integers(0, 15), st.booleans(), st.booleans()), min_size=1, max_size=30),
    crash_after=st.integers(0, 30),
)
def test_a_crash_at_any_moment_loses_no_timer_and_repeats_only_unsaved_deliveries(
    times: list[int], steps: list[tuple[int, bool, bool]], crash_after: int
) -> None:
    queue = entries_for(times)
    index = TimerIndex(TimerCheckpoint())
    loaded = 0
    now = 0
    delivered: list[int] = []
    saved = TimerCheckpoint()
    delivered_when_saved = 0
    for step, (advance, arrive, save) in enumerate(steps):
        if step == crash_after:
            break
        # Entries reach the queue in order; the service loads what has arrived.
        if (arrive or advance == 0) and loaded < len(queue):
            index.load(queue[loaded])
            loaded += 1
        now += advance
        due = index.pop_due(now, 5)
        delivered.extend(e.queue_offset for e in due)
        index.done(due)
        index.mark_delivered_until(now)
        if save:
            saved = index.checkpoint()
            delivered_when_saved = len(delivered)

    # Crash: rebuild from the saved checkpoint over the whole queue, then run to the end of time.
    after = TimerIndex(saved)
    for entry in queue[saved.low_offset :]:
        after.load(entry)
    redelivered = [e.queue_offset for e in after.pop_due(10**9, 10**6)]
    assert set(delivered) | set(redelivered) == set(range(len(queue)))
    assert set(delivered) & set(redelivered) <= set(delivered[delivered_when_saved:]) | _late_loads(saved, queue)


def _late_loads(saved: TimerCheckpoint, queue: list[TimerEntry]) -> set[int]:
    """Entries loaded after the save may repeat (they were not covered by it)."""
    return {e.queue_offset for e in queue if e.queue_offset >= saved.scan_offset}
