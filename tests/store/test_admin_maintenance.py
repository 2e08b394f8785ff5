"""The store side of mqadmin's maintenance requests (RocketMQ 4.9's DefaultMessageStore):
executeDeleteFilesManually, cleanExpiredConsumerQueue, cleanUnusedTopic, and the raw
ConsumeQueue entries QUERY_CONSUME_QUEUE answers."""

from __future__ import annotations

import time
from pathlib import Path

from orbitmq.store.api import MessageStore
from orbitmq.store.store import MANUAL_DELETE_ROUNDS, DefaultMessageStore
from tests.store.helpers import FakeClock, message, small_config
from tests.store.test_cleaning import FakeDisk, fill_files

HOUR_MS = 3_600_000


def far_hour(clock: FakeClock) -> str:
    return str((time.localtime(clock.now_ms / 1000).tm_hour + 12) % 24)


async def test_manual_deletion_removes_expired_files_outside_the_delete_hour_then_expired_queues_go(
    tmp_path: Path,
) -> None:
    """DefaultMessageStore.executeDeleteFilesManually: the next rounds delete as at deleteWhen;
    cleanExpiredConsumerQueue then destroys queues left wholly below the CommitLog (offsets restart)."""
    clock = FakeClock()
    config = small_config(tmp_path, file_reserved_time=1, delete_when=far_hour(clock))
    async with DefaultMessageStore(config, clock_ms=clock, disk_usage=FakeDisk(tmp_path, fixed=0.2)) as store:
        assert (await store.put_message(message(topic="Old", body=b"x" * 300))).is_ok
        await fill_files(store, 60)
        files = len(store.commitlog.log.files)
        clock.advance(2 * HOUR_MS)
        assert await store.cleaner.run_round() == 0, "not the delete hour and the disk has room"
        store.delete_expired_files_manually()
        assert store.cleaner.manual_rounds == MANUAL_DELETE_ROUNDS
        assert await store.cleaner.run_round() == files - 1
        assert store.cleaner.manual_rounds == MANUAL_DELETE_ROUNDS - 1
        assert store.get_max_offset_in_queue("Old", 0) == 1
        assert store.clean_expired_consume_queues() == 1, "only Old's queue points wholly below the CommitLog"
        assert store.consume_queue_entries("Old", 0, 0, 1) is None
        assert store.get_max_offset_in_queue("Old", 0) == 0
        assert store.get_max_offset_in_queue("T", 0) == 30
        again = await store.put_message(message(topic="Old", body=b"y"))
        assert again.is_ok and again.append_result is not None and again.append_result.logics_offset == 0


async def test_clean_unused_topics_spares_the_topic_table_and_system_topics(store: MessageStore) -> None:
    """Both stores (file and memory)."""
    for topic in ("Kept", "Gone", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "rmq_sys_wheel_timer"):
        assert (await store.put_message(message(topic=topic))).is_ok
    assert store.clean_unused_topics(["Kept"]) == 1
    assert store.consume_queue_entries("Gone", 0, 0, 1) is None
    for topic in ("Kept", "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "rmq_sys_wheel_timer"):
        assert store.get_max_offset_in_queue(topic, 0) == 1, topic


async def test_consume_queue_entries_are_raw_units_from_an_index(store: MessageStore) -> None:
    """Both stores (file and memory)."""
    offsets = []
    for i in range(3):
        result = await store.put_message(message(body=b"m%d" % i))
        assert result.append_result is not None
        offsets.append(result.append_result.wrote_offset)
    entries = store.consume_queue_entries("T", 0, 1, 5)
    assert entries is not None and [e[0] for e in entries] == offsets[1:]
    assert all(size > 0 for _, size, _ in entries)
    assert store.consume_queue_entries("T", 0, 3, 1) == []
    assert store.consume_queue_entries("T", 7, 0, 1) is None
