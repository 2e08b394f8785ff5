"""The acknowledgement rule of the in-sync set, and the controller-mode frame codecs."""

from __future__ import annotations

import pytest

from orbitmq.broker.ha.insync import InSyncSet, ReplicaState, enough_replicas, required_offset
from orbitmq.broker.ha.protocol import (
    AckDecoder,
    DataDecoder,
    decode_slave_hello,
    encode_ack,
    encode_data_header,
    encode_master_hello,
)
from orbitmq.errors import FrameError


def r(broker_id: int, acked: int, connected: bool = True) -> ReplicaState:
    return ReplicaState(broker_id, "peer", acked=acked, connected=connected)


def test_all_ack_waits_for_every_member_even_a_disconnected_one() -> None:
    replicas = [r(2, 500), r(3, 300, connected=False), r(4, 100)]
    def rule(members: frozenset[int] | None) -> int:
        return required_offset(replicas, members, 900, controller_mode=True, all_ack=True, in_sync_replicas=1)

    assert rule(frozenset({2, 3})) == 300
    assert rule(frozenset({2, 5})) == 0, "a member never seen holds nothing"
    assert rule(frozenset()) == 900, "the master alone"
    assert rule(None) == 100, "None: every connected slave"


def test_without_all_ack_in_sync_replicas_counts_any_connected_slaves() -> None:
    replicas = [r(2, 500), r(3, 300), r(4, 800, connected=False)]
    assert required_offset(replicas, frozenset({2}), 900, controller_mode=True, all_ack=False, in_sync_replicas=1) == 900
    assert required_offset(replicas, None, 900, controller_mode=True, all_ack=False, in_sync_replicas=3) == 300
    assert required_offset(replicas, None, 900, controller_mode=True, all_ack=False, in_sync_replicas=4) == 0
    # A 4.x SYNC_MASTER waits for one slave.
    assert required_offset(replicas, None, 900, controller_mode=False, all_ack=False, in_sync_replicas=1) == 500


def test_min_in_sync_replicas_counts_the_master_and_the_set() -> None:
    assert enough_replicas([], frozenset({2}), controller_mode=True, min_in_sync_replicas=2)
    assert not enough_replicas([], frozenset(), controller_mode=True, min_in_sync_replicas=2)
    assert enough_replicas([], frozenset(), controller_mode=False, min_in_sync_replicas=2)


def test_setting_the_in_sync_set_tells_listeners_once_per_change() -> None:
    seen: list[frozenset[int] | None] = []
    s = InSyncSet()
    s.on_change(lambda: seen.append(s.members))
    s.set([2, 3])
    s.set([3, 2])
    s.set(None)
    assert seen == [frozenset({2, 3}), None]


def test_controller_frames_have_rocketmq5s_layout() -> None:
    assert encode_ack(5) == b"\x00\x00\x00\x02" + (5).to_bytes(8, "big")
    assert encode_master_hello(9, [(1, 0)]) == (
        b"\x00\x00\x00\x01" + (12).to_bytes(4, "big") + (9).to_bytes(8, "big") + (1).to_bytes(4, "big")
        + (1).to_bytes(4, "big") + (0).to_bytes(8, "big")
    )
    assert len(encode_data_header(0, 0, 1, 0, 0)) == 36
    assert decode_slave_hello(b"\x00\x00\x00\x01\x00\x01\x00\x00" + (3).to_bytes(8, "big")).sync_from_last_file


def test_controller_frames_with_a_wrong_state_break_the_stream() -> None:
    with pytest.raises(FrameError):
        decode_slave_hello(b"\x00\x00\x00\x02" + bytes(12))
    with pytest.raises(FrameError):
        AckDecoder().feed(b"\x00\x00\x00\x01" + bytes(8))
    with pytest.raises(FrameError):
        DataDecoder(1024).feed(b"\x00\x00\x00\x01" + bytes(32))
    with pytest.raises(FrameError):
        DataDecoder(1024).feed(encode_data_header(0, 4096, 1, 0, 0))
    frames = DataDecoder(1024).feed(encode_data_header(10, 3, 2, 4, 8) + b"abc" + encode_data_header(13, 0, 2, 4, 8)[:5])
    assert [(f.offset, bytes(f.data), f.epoch, f.epoch_start, f.confirm_offset) for f in frames] == [(10, b"abc", 2, 4, 8)]
