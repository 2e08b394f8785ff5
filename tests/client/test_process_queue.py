"""The process queue commits the lowest offset in flight and drives flow control."""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.client.process_queue import ProcessQueue, pull_delay_ms


@dataclass
class Msg:
    queue_offset: int
    body: bytes = b"xx"


def test_committed_offset_is_the_lowest_message_still_in_flight() -> None:
    pq: ProcessQueue[Msg] = ProcessQueue()
    msgs = [Msg(i) for i in range(10, 15)]
    pq.put_messages(msgs)
    assert pq.remove_messages([msgs[1], msgs[3]]) == 10
    assert pq.remove_messages([msgs[0]]) == 12
    assert pq.remove_messages([msgs[2], msgs[4]]) == 15
    assert pq.msg_count == 0 and pq.msg_size == 0


def test_removing_from_an_empty_queue_reports_nothing_to_commit() -> None:
    assert ProcessQueue[Msg]().remove_messages([Msg(1)]) == -1


def test_duplicate_pulls_are_counted_once() -> None:
    pq: ProcessQueue[Msg] = ProcessQueue()
    pq.put_messages([Msg(1), Msg(2)])
    pq.put_messages([Msg(2), Msg(3)])
    assert pq.msg_count == 3
    assert pq.msg_size == 6


def test_span_and_counts_trigger_flow_control() -> None:
    pq: ProcessQueue[Msg] = ProcessQueue()
    pq.put_messages([Msg(0), Msg(2500)])
    kwargs = {"threshold_count": 1000, "threshold_size_mib": 100, "max_span": 2000}
    assert pull_delay_ms(pq, orderly=False, **kwargs) == 50
    assert pull_delay_ms(pq, orderly=True, **kwargs) == 0
    pq.remove_messages([Msg(0)])
    assert pull_delay_ms(pq, orderly=False, **kwargs) == 0
    pq.put_messages([Msg(3000 + i) for i in range(1001)])
    assert pull_delay_ms(pq, orderly=True, **kwargs) == 50


def test_cached_bytes_trigger_flow_control() -> None:
    pq: ProcessQueue[Msg] = ProcessQueue()
    pq.put_messages([Msg(0, b"x" * (1024 * 1024 + 1))])
    assert pull_delay_ms(pq, orderly=False, threshold_count=1000, threshold_size_mib=1, max_span=2000) == 50


def test_orderly_take_commit_and_retry_keep_order() -> None:
    pq: ProcessQueue[Msg] = ProcessQueue()
    assert pq.put_messages([Msg(i) for i in range(5)]) is True
    assert pq.put_messages([Msg(5)]) is False  # a consume task is already running
    first = pq.take_messages(2)
    assert [m.queue_offset for m in first] == [0, 1]
    pq.make_messages_to_consume_again(first)
    again = pq.take_messages(3)
    assert [m.queue_offset for m in again] == [0, 1, 2]
    assert pq.commit() == 3
    assert pq.msg_count == 3
    rest = pq.take_messages(10)
    assert [m.queue_offset for m in rest] == [3, 4, 5]
    pq.rollback()
    assert [m.queue_offset for m in pq.take_messages(10)] == [3, 4, 5]
    assert pq.commit() == 6
    assert pq.take_messages(1) == [] and pq.consuming is False


def test_pull_and_lock_expiry_use_the_rocketmq_limits() -> None:
    pq: ProcessQueue[Msg] = ProcessQueue()
    assert not pq.is_pull_expired(pq.last_pull_ms + 120_000)
    assert pq.is_pull_expired(pq.last_pull_ms + 120_001)
    assert pq.is_lock_expired(pq.last_lock_ms + 30_001)
