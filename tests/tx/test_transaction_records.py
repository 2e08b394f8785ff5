"""The broker's transaction records and resolution bookkeeping, without servers."""

from __future__ import annotations

from orbitmq.broker.transaction import messages as tm
from orbitmq.broker.transaction.progress import HalfProgress
from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExt, MessageExtBrokerInner
from orbitmq.common.record import decode_record


def prepared(topic: str = "Orders", queue_id: int = 3) -> MessageExtBrokerInner:
    msg = MessageExtBrokerInner(
        topic=topic, body=b"order 1", queue_id=queue_id, sys_flag=0x4 | 0x1, born_timestamp=1_000,
        born_host="10.0.0.2:5000", store_host="10.0.0.1:10911",
        properties={mc.TRANSACTION_PREPARED: "true", mc.PRODUCER_GROUP: "PG", mc.TAGS: "new",
                    mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U1"},
    )
    msg.refresh_properties_string()
    return msg


def test_a_prepared_message_becomes_a_half_message_remembering_where_it_belongs() -> None:
    msg = prepared()
    tm.make_half(msg)
    assert (msg.topic, msg.queue_id) == ("RMQ_SYS_TRANS_HALF_TOPIC", 0)
    assert msg.sys_flag == 0x1  # transaction bits cleared, compression kept
    assert msg.properties[mc.REAL_TOPIC] == "Orders" and msg.properties[mc.REAL_QUEUE_ID] == "3"
    assert "REAL_TOPIC\x01Orders" in msg.properties_string
    assert tm.real_destination(msg) == ("Orders", 3)


def test_commit_restores_the_real_topic_and_points_back_at_the_half_message() -> None:
    half = prepared()
    tm.make_half(half)
    half.commit_log_offset = 4096
    real = tm.committed(half)
    assert (real.topic, real.queue_id) == ("Orders", 3)
    assert real.sys_flag == 0x8 | 0x1
    assert real.prepared_transaction_offset == 4096
    assert mc.TRANSACTION_PREPARED not in real.properties and mc.REAL_TOPIC not in real.properties
    assert real.properties[mc.PRODUCER_GROUP] == "PG" and real.body == b"order 1"
    assert real.tags_code == tag_hash_code("new")


def test_op_record_names_the_half_queue_offset_with_tag_d() -> None:
    op = tm.op_record(17, "10.0.0.1:10911", now_ms=5)
    assert (op.topic, op.queue_id, op.body, op.tags) == ("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0, b"17", "d")
    assert tm.parse_op_body(op.body) == 17
    assert tm.parse_op_body(b"not a number") is None


def test_a_renewed_copy_counts_checks_and_keeps_the_first_offset_and_birth() -> None:
    half = prepared()
    tm.make_half(half)
    once = tm.renewed_half(half, 5)
    twice = tm.renewed_half(once, 9)
    assert tm.check_times(once) == 1 and tm.check_times(twice) == 2
    assert twice.properties[mc.TRANSACTION_PREPARED_QUEUE_OFFSET] == "5"
    assert twice.born_timestamp == 1_000 and twice.topic == "RMQ_SYS_TRANS_HALF_TOPIC"
    assert tm.discarded(twice).topic == "TRANS_CHECK_MAX_TIME_TOPIC"


def test_immunity_comes_from_the_message_when_it_carries_one() -> None:
    msg = MessageExt(topic="T", properties={mc.CHECK_IMMUNITY_TIME_IN_SECONDS: "30"})
    assert tm.immunity_ms(msg, 6_000) == 30_000
    assert tm.immunity_ms(MessageExt(topic="T"), 6_000) == 6_000
    assert tm.immunity_ms(MessageExt(topic="T", properties={mc.CHECK_IMMUNITY_TIME_IN_SECONDS: "x"}), 6) == 6


def test_check_body_is_a_store_record_of_the_real_topic_and_queue() -> None:
    half = prepared()
    tm.make_half(half)
    half.commit_log_offset, half.queue_offset = 4096, 8
    back = decode_record(tm.check_body(half), decompress=False)
    assert (back.topic, back.queue_id, back.commit_log_offset, back.queue_offset) == ("Orders", 3, 4096, 8)
    assert back.properties[mc.PRODUCER_GROUP] == "PG" and back.body == b"order 1"


def test_a_half_offset_is_resolved_once_and_the_progress_only_moves_forward() -> None:
    progress = HalfProgress(half_offset=10, op_offset=0)
    assert progress.is_resolved(9) and not progress.is_resolved(10)
    assert progress.reserve(12)
    assert not progress.reserve(12)  # being resolved
    progress.record_op(0, 12)
    progress.release(12)
    assert not progress.reserve(12)  # resolved
    progress.record_op(1, 10)
    assert progress.advance(11, op_max_offset=2)
    assert progress.op_offset == 0  # the op record of 12 is still needed
    assert not progress.advance(5, op_max_offset=2)
    assert progress.advance(13, op_max_offset=2)
    assert progress.op_offset == 2 and progress.done == set()
