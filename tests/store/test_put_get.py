"""Putting messages and reading them back by queue, offset, time, key and physical offset."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import Message, MessageExtBatch
from orbitmq.common.record import decode_record, encode_batch, iter_records
from orbitmq.common.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from orbitmq.store.api import GetMessageStatus, MessageStore, PutMessageStatus
from orbitmq.store.config import BrokerRole
from orbitmq.store.store import DefaultMessageStore
from tests.store.conftest import StoreFactory
from tests.store.helpers import BORN_HOST, STORE_HOST, FakeClock, message, small_config


def bodies(store: MessageStore, topic: str, queue_id: int, offset: int, n: int = 32) -> list[bytes]:
    with store.get_message("g", topic, queue_id, offset, n) as got:
        return [m.body for m in iter_records(b"".join(got.buffers))]


class TagCode:
    """A filter on one tags code (the ConsumeQueue slot only)."""

    def __init__(self, code: int) -> None:
        self.code = code

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return tags_code == self.code

    def is_matched_by_commit_log(self, record: memoryview, properties: Mapping[str, str] | None) -> bool:
        return True


async def test_messages_come_back_in_queue_order_with_dense_offsets(store: MessageStore) -> None:
    for i in range(10):
        result = await store.put_message(message(body=b"m%d" % i, queue_id=i % 2))
        assert result.status is PutMessageStatus.PUT_OK
        assert result.append_result is not None and result.append_result.logics_offset == i // 2
    assert bodies(store, "T", 0, 0) == [b"m0", b"m2", b"m4", b"m6", b"m8"]
    assert bodies(store, "T", 1, 2) == [b"m5", b"m7", b"m9"]
    assert store.get_max_offset_in_queue("T", 0) == 5
    assert store.get_min_offset_in_queue("T", 0) == 0
    with store.get_message("g", "T", 0, 1, 2) as got:
        assert got.status is GetMessageStatus.FOUND
        assert (got.message_count, got.next_begin_offset, got.queue_offsets) == (2, 3, [1, 2])
        records = list(iter_records(b"".join(got.buffers)))
        assert [r.queue_offset for r in records] == [1, 2]
        assert got.buffer_total_size == sum(len(b) for b in got.buffers)


async def test_reads_are_views_of_the_mapped_file_not_copies(file_store: MessageStore) -> None:
    await file_store.put_message(message(body=b"zero-copy"))
    with file_store.get_message("g", "T", 0, 0, 1) as got:
        assert isinstance(got.buffers[0], memoryview)
        assert got.buffers[0].obj is file_store.commitlog.log.files[0].mm


async def test_get_message_statuses_follow_rocketmq(store: MessageStore) -> None:
    assert store.get_message("g", "T", 0, 0, 1).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    for _ in range(3):
        await store.put_message(message())
    at_end = store.get_message("g", "T", 0, 3, 1)
    assert (at_end.status, at_end.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 3)
    past = store.get_message("g", "T", 0, 9, 1)
    assert (past.status, past.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 0)
    assert (past.min_offset, past.max_offset) == (0, 3)


async def test_tag_filter_sees_the_tags_code_first_and_skips_unmatched(store: MessageStore) -> None:
    for i in range(6):
        await store.put_message(message(body=b"%d" % i, tags="TagA" if i % 3 == 0 else "TagB"))
    seen_codes: list[int] = []
    commit_log_checks: list[int] = []

    class OnlyTagA:
        def is_matched_by_consume_queue(self, tags_code: int) -> bool:
            seen_codes.append(tags_code)
            return tags_code == tag_hash_code("TagA")

        def is_matched_by_commit_log(self, record: memoryview, properties: Mapping[str, str] | None) -> bool:
            commit_log_checks.append(len(record))
            return True

    with store.get_message("g", "T", 0, 0, 32, OnlyTagA()) as got:
        assert [m.body for m in iter_records(b"".join(got.buffers))] == [b"0", b"3"]
        assert got.next_begin_offset == 6
    assert len(seen_codes) == 6 and len(commit_log_checks) == 2

    class NothingMatches(OnlyTagA):
        def is_matched_by_consume_queue(self, tags_code: int) -> bool:
            return False

    nothing = store.get_message("g", "T", 0, 0, 32, NothingMatches())
    assert (nothing.status, nothing.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 6)


async def test_commit_log_filter_can_read_properties_from_the_record(store: MessageStore) -> None:
    await store.put_message(message(body=b"a", properties={"color": "red"}))
    await store.put_message(message(body=b"b", properties={"color": "blue"}))

    class Red:
        def is_matched_by_consume_queue(self, tags_code: int) -> bool:
            return True

        def is_matched_by_commit_log(self, record: memoryview, properties: Mapping[str, str] | None) -> bool:
            props = properties if properties is not None else decode_record(record, with_body=False).properties
            return props.get("color") == "red"

    with store.get_message("g", "T", 0, 0, 32, Red()) as got:
        assert [m.body for m in iter_records(b"".join(got.buffers))] == [b"a"]


async def test_pull_limits_cap_count_and_bytes(tmp_path: Path, make_store: StoreFactory) -> None:
    config = small_config(
        tmp_path, mapped_file_size_commit_log=64 * 1024, max_transfer_count_on_message_in_memory=4,
        max_transfer_bytes_on_message_in_memory=1000,
    )
    store = make_store(config)
    async with store:  # type: ignore[attr-defined]
        for _ in range(10):
            await store.put_message(message(body=b"x" * 100))
        with store.get_message("g", "T", 0, 0, 32) as got:
            assert got.message_count == 4
        for _ in range(10):
            await store.put_message(message(body=b"y" * 400, queue_id=1))
        with store.get_message("g", "T", 1, 0, 32) as got:
            assert got.message_count == 1 and got.next_begin_offset == 1


async def test_batch_items_become_records_with_consecutive_queue_offsets(store: MessageStore) -> None:
    await store.put_message(message(body=b"before"))
    items = [Message("T", f"b{i}".encode(), properties={mc.TAGS: "TagB", mc.KEYS: f"bk{i}"}) for i in range(4)]
    batch = MessageExtBatch(
        topic="T", queue_id=0, body=encode_batch(items), properties_string="WAIT\x01true",
        born_timestamp=1_700_000_000_000, born_host=BORN_HOST, store_host=STORE_HOST,
    )
    result = await store.put_messages(batch)
    assert result.status is PutMessageStatus.PUT_OK
    appended = result.append_result
    assert appended is not None and appended.logics_offset == 1 and appended.msg_num == 4
    assert len(appended.msg_ids) == 4
    with store.get_message("g", "T", 0, 1, 32) as got:
        records = list(iter_records(b"".join(got.buffers)))
    assert [r.body for r in records] == [b"b0", b"b1", b"b2", b"b3"]
    assert [r.queue_offset for r in records] == [1, 2, 3, 4]
    assert [r.offset_msg_id for r in records] == list(appended.msg_ids)
    assert records[2].properties == {mc.TAGS: "TagB", mc.KEYS: "bk2", mc.WAIT_STORE_MSG_OK: "true"}
    assert store.get_commit_log_offset_in_queue("T", 0, 3) == records[2].commit_log_offset
    with store.get_message("g", "T", 0, 3, 1, TagCode(tag_hash_code("TagB"))) as tagged:
        assert tagged.queue_offsets == [3], "the queue entry holds the item's tags code"
    found = store.query_message("T", "bk3", 10, 0, 2**62)
    with found:
        assert [decode_record(b).body for b in found.buffers] == [b"b3"]


async def test_malformed_batch_is_refused_and_nothing_is_written(store: MessageStore) -> None:
    body = encode_batch([Message("T", b"ok")])
    batch = MessageExtBatch(topic="T", queue_id=0, body=body[:-3], born_host=BORN_HOST, store_host=STORE_HOST)
    result = await store.put_messages(batch)
    assert result.status is PutMessageStatus.MESSAGE_ILLEGAL and "batch" in result.remark
    assert store.get_max_phy_offset() == 0


async def test_limits_are_enforced_with_clear_statuses(store: MessageStore) -> None:
    too_big = await store.put_message(message(body=b"x" * 5000))
    assert too_big.status is PutMessageStatus.MESSAGE_ILLEGAL and "maxMessageSize" in too_big.remark
    props = await store.put_message(message(properties={"p": "v" * 33000}))
    assert props.status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    long_topic = await store.put_message(message(topic="t" * 200))
    assert long_topic.status is PutMessageStatus.MESSAGE_ILLEGAL
    escape = await store.put_message(message(topic="../etc"))
    assert escape.status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.get_max_phy_offset() == 0


async def test_prepared_and_rollback_records_are_stored_but_not_consumable(store: MessageStore) -> None:
    prepared = await store.put_message(message(body=b"half", sys_flag=TRANSACTION_PREPARED_TYPE))
    rollback = await store.put_message(message(body=b"rb", sys_flag=TRANSACTION_ROLLBACK_TYPE))
    commit = await store.put_message(message(body=b"commit", sys_flag=TRANSACTION_COMMIT_TYPE))
    assert prepared.append_result is not None and prepared.append_result.logics_offset == 0
    assert rollback.append_result is not None and commit.append_result is not None
    assert commit.append_result.logics_offset == 0
    assert bodies(store, "T", 0, 0) == [b"commit"]
    looked = store.look_message_by_offset(prepared.append_result.wrote_offset)
    assert looked is not None and looked.body == b"half"


async def test_offset_by_time_finds_exact_or_nearest_earlier_on_tie(tmp_path: Path, make_store: StoreFactory) -> None:
    clock = FakeClock(1_000_000)
    store = make_store(small_config(tmp_path), clock_ms=clock)
    async with store:  # type: ignore[attr-defined]
        for t in (1_000_000, 1_000_010, 1_000_010, 1_000_020, 1_000_040):
            clock.now_ms = t
            await store.put_message(message())
        assert store.get_offset_in_queue_by_time("T", 0, 1_000_010) == 1
        assert store.get_offset_in_queue_by_time("T", 0, 1_000_015) == 2  # tie: the earlier neighbour
        assert store.get_offset_in_queue_by_time("T", 0, 1_000_031) == 4
        assert store.get_offset_in_queue_by_time("T", 0, 1) == 0
        assert store.get_offset_in_queue_by_time("T", 0, 9_999_999) == 4
        assert store.get_earliest_message_time("T", 0) == 1_000_000
        assert store.get_message_store_timestamp("T", 0, 3) == 1_000_020
        assert store.get_offset_in_queue_by_time("T", 7, 1) == 0


async def test_store_times_never_go_backwards(tmp_path: Path, make_store: StoreFactory) -> None:
    clock = FakeClock(5_000)
    store = make_store(small_config(tmp_path), clock_ms=clock)
    async with store:  # type: ignore[attr-defined]
        await store.put_message(message())
        clock.now_ms = 4_000
        result = await store.put_message(message())
        assert result.append_result is not None and result.append_result.store_timestamp == 5_000


async def test_query_by_key_and_unique_key_within_time_range(store: MessageStore, clock: FakeClock) -> None:
    await store.put_message(message(body=b"a", keys="order-1 shared"))
    clock.advance(10_000)
    await store.put_message(message(body=b"b", keys="shared", properties={mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "U1"}))
    with store.query_message("T", "shared", 10, 0, 2**62) as found:
        assert sorted(decode_record(b).body for b in found.buffers) == [b"a", b"b"]
        assert found.index_last_update_phyoffset > 0
    with store.query_message("T", "U1", 10, 0, 2**62) as found:
        assert [decode_record(b).body for b in found.buffers] == [b"b"]
    with store.query_message("T", "order-1", 10, clock.now_ms - 1000, 2**62) as found:
        assert found.buffers == []
    with store.query_message("Other", "shared", 10, 0, 2**62) as found:
        assert found.buffers == []


async def test_message_by_physical_offset_and_commit_log_data(store: MessageStore) -> None:
    first = await store.put_message(message(body=b"one"))
    second = await store.put_message(message(body=b"two"))
    assert first.append_result is not None and second.append_result is not None
    found = store.look_message_by_offset(second.append_result.wrote_offset)
    assert found is not None and found.body == b"two" and found.commit_log_offset == second.append_result.wrote_offset
    assert store.look_message_by_offset(3) is None
    assert store.look_message_by_offset(10**9) is None
    assert store.look_message_by_offset(-5) is None
    assert store.select_one_message_by_offset(first.append_result.wrote_offset + 1) is None
    data = store.get_commit_log_data(0)
    assert data is not None
    with data:
        assert data.size == store.get_max_phy_offset()
        assert [m.body for m in iter_records(data.buffer)] == [b"one", b"two"]
    assert store.get_commit_log_offset_in_queue("T", 0, 1) == second.append_result.wrote_offset


async def test_dispatch_listeners_hear_each_queue_once_per_loop_turn(store: MessageStore) -> None:
    import asyncio

    heard: list[tuple[str, int, int]] = []
    store.add_dispatch_listener(lambda topic, qid, offset: heard.append((topic, qid, offset)))
    await asyncio.gather(*(store.put_message(message(queue_id=i % 2)) for i in range(6)))
    await asyncio.sleep(0)
    assert sorted(heard) == [("T", 0, 3), ("T", 1, 3)]


async def test_delete_topics_drops_queues_and_offsets(store: MessageStore, tmp_path: Path) -> None:
    await store.put_message(message(topic="Gone"))
    await store.put_message(message(topic="Kept"))
    assert store.delete_topics(["Gone"]) == 1
    assert store.get_max_offset_in_queue("Gone", 0) == 0
    if isinstance(store, DefaultMessageStore):
        assert not (tmp_path / "consumequeue" / "Gone").exists()
    result = await store.put_message(message(topic="Gone"))
    assert result.append_result is not None and result.append_result.logics_offset == 0
    assert bodies(store, "Kept", 0, 0) == [b"hello"]


async def test_a_slave_or_closed_store_refuses_puts(tmp_path: Path, make_store: StoreFactory) -> None:
    slave = make_store(small_config(tmp_path / "s", broker_role=BrokerRole.SLAVE))
    await slave.start()
    result = await slave.put_message(message())
    assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE and "slave" in result.remark
    await slave.close()
    closed = await slave.put_message(message())
    assert closed.status is PutMessageStatus.SERVICE_NOT_AVAILABLE


async def test_second_store_on_the_same_folder_is_refused(file_store: MessageStore, tmp_path: Path) -> None:
    import pytest

    from orbitmq.errors import StoreError

    other = DefaultMessageStore(small_config(tmp_path))
    with pytest.raises(StoreError, match="in use"):
        await other.start()
