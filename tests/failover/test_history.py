"""The history checker finds what it must: each rule has a history that breaks it."""

from __future__ import annotations

import pytest

from tests.support.history import History, HistoryViolation, Outcome

pytestmark = pytest.mark.timeout(10)


def _stream(history: History, stream: str, queue: str, n: int, outcome: Outcome = Outcome.ACKED) -> list[str]:
    keys = [f"{stream}-{i}" for i in range(n)]
    for i, key in enumerate(keys):
        history.send(key, outcome, queue=queue, stream=stream, seq=i)
    return keys


def test_a_clean_history_passes_and_is_counted() -> None:
    h = History()
    keys = _stream(h, "s", "b:0", 5)
    h.send("u1", Outcome.UNKNOWN)
    h.send("u2", Outcome.UNKNOWN)
    h.send("f1", Outcome.FAILED)
    for key in keys + ["u1"]:
        h.receive(key, queue="b:0")
    report = h.check(max_duplicates=0, orderly=True)
    assert (report.acked, report.unknown, report.failed) == (5, 2, 1)
    assert report.delivered == 6 and report.duplicates == 0 and report.unknown_delivered == 1


def test_an_acknowledged_message_never_consumed_fails() -> None:
    h = History()
    keys = _stream(h, "s", "b:0", 3)
    h.receive(keys[0], queue="b:0")
    h.receive(keys[2], queue="b:0")
    with pytest.raises(HistoryViolation, match="1 acknowledged messages never consumed: \\['s-1'\\]"):
        h.check()
    # A measured loss bound (asynchronous replication) admits it, and the report names it.
    assert h.check(max_lost=1).lost == ["s-1"]


def test_a_message_never_sent_fails() -> None:
    h = History()
    h.send("a", Outcome.ACKED)
    h.receive("a", queue="b:0")
    h.receive("ghost", queue="b:0")
    with pytest.raises(HistoryViolation, match="never sent: \\['ghost'\\]"):
        h.check()


def test_a_message_whose_send_failed_for_certain_must_not_be_delivered() -> None:
    h = History()
    h.send("refused", Outcome.FAILED)
    h.receive("refused", queue="b:0")
    with pytest.raises(HistoryViolation, match="send failed were delivered"):
        h.check()


def test_duplicates_are_counted_and_bounded() -> None:
    h = History()
    keys = _stream(h, "s", "b:0", 3)
    for key in keys + keys[1:] + keys[2:]:
        h.receive(key, queue="b:0")
    assert h.check(max_duplicates=3).duplicates == 3
    with pytest.raises(HistoryViolation, match="3 duplicate deliveries \\(at most 2 allowed\\)"):
        h.check(max_duplicates=2)


def test_an_orderly_stream_delivered_out_of_order_fails() -> None:
    h = History()
    keys = _stream(h, "s", "b:0", 3)
    for key in (keys[0], keys[2], keys[1]):
        h.receive(key, queue="b:0")
    h.check()  # without the order rule everything arrived
    with pytest.raises(HistoryViolation, match="s-2 delivered on b:0 before s-1"):
        h.check(orderly=True)


def test_redelivery_of_a_prefix_keeps_order_and_unacknowledged_gaps_do_not_count() -> None:
    h = History()
    h.send("s-0", Outcome.ACKED, queue="b:0", stream="s", seq=0)
    h.send("s-1", Outcome.UNKNOWN, queue="b:0", stream="s", seq=1)  # maybe stored, maybe not
    h.send("s-2", Outcome.ACKED, queue="b:0", stream="s", seq=2)
    h.send("s-3", Outcome.ACKED, queue="b:1", stream="s", seq=3)  # the stream moved queue
    # Consumed, then re-consumed from the committed offset after a failover.
    for key in ("s-0", "s-2", "s-0", "s-2", "s-3"):
        h.receive(key, queue="b:0" if key != "s-3" else "b:1")
    report = h.check(orderly=True, max_duplicates=2)
    assert report.order_violations == [] and report.duplicates == 2


def test_streams_and_queues_are_ordered_independently() -> None:
    h = History()
    a = _stream(h, "a", "b:0", 2)
    b = _stream(h, "b", "b:1", 2)
    for key in (b[0], a[0], b[1], a[1]):
        h.receive(key, queue="x")
    h.check(orderly=True)


def test_a_history_survives_its_json_lines_and_merges() -> None:
    h = History()
    _stream(h, "s", "b:0", 2)
    h.send("u", Outcome.UNKNOWN, broker="198.18.0.2:10911", at=1.5)
    h.receive("s-0", queue="b:0", consumer="c1", at=2.0)
    copy = History.load_lines(list(h.dump_lines()))
    assert copy.sends == h.sends and copy.receives == h.receives
    other = History()
    other.receive("s-1", queue="b:0")
    copy.merge(other)
    copy.check(orderly=True)
    with pytest.raises(ValueError, match="recorded twice"):
        copy.merge(History.load_lines(list(h.dump_lines())))


def test_every_broken_rule_is_named_at_once() -> None:
    h = History()
    h.send("lost", Outcome.ACKED)
    h.send("dup", Outcome.ACKED)
    for _ in range(3):
        h.receive("dup", queue="q")
    h.receive("ghost", queue="q")
    with pytest.raises(HistoryViolation) as info:
        h.check(max_duplicates=0)
    text = str(info.value)
    assert "never consumed" in text and "never sent" in text and "2 duplicate deliveries" in text
