"""Offset stores keep offsets moving forward and survive restarts (local file)."""

from __future__ import annotations

from pathlib import Path

from orbitmq.client.offset_store import (
    OFFSET_NOT_FOUND,
    LocalFileOffsetStore,
    ReadOffsetType,
    decode_offset_table,
    encode_offset_table,
)
from orbitmq.client.queue import MessageQueue

MQ = MessageQueue("T", "broker-a", 1)


async def test_increase_only_updates_never_rewind(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("G", "c1", tmp_path)
    store.update_offset(MQ, 10, True)
    store.update_offset(MQ, 5, True)
    assert await store.read_offset(MQ, ReadOffsetType.MEMORY) == 10
    store.update_offset(MQ, 5, False)
    assert await store.read_offset(MQ, ReadOffsetType.MEMORY) == 5


async def test_local_offsets_survive_a_restart(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("G", "c1", tmp_path)
    other = MessageQueue("T", "broker-b", 0)
    store.update_offset(MQ, 42, True)
    store.update_offset(other, 7, True)
    await store.persist_all([MQ, other])
    store.update_offset(MQ, 43, True)
    await store.persist_all([MQ, other])

    reopened = LocalFileOffsetStore("G", "c1", tmp_path)
    await reopened.load()
    assert await reopened.read_offset(MQ, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 43
    assert await reopened.read_offset(other, ReadOffsetType.STORE) == 7
    assert await reopened.read_offset(MessageQueue("T", "x", 9), ReadOffsetType.STORE) == OFFSET_NOT_FOUND
    assert (reopened.path.parent / "offsets.json.bak").exists()


async def test_a_corrupt_offset_file_falls_back_to_the_backup(tmp_path: Path) -> None:
    store = LocalFileOffsetStore("G", "c1", tmp_path)
    store.update_offset(MQ, 1, True)
    await store.persist_all([MQ])
    store.update_offset(MQ, 2, True)
    await store.persist_all([MQ])
    store.path.write_text("{garbage")
    reopened = LocalFileOffsetStore("G", "c1", tmp_path)
    await reopened.load()
    assert await reopened.read_offset(MQ, ReadOffsetType.MEMORY) == 1


def test_offset_table_uses_the_fastjson_object_keyed_form() -> None:
    text = encode_offset_table({MQ: 42})
    assert text == '{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:42}}'
    assert decode_offset_table(text) == {MQ: 42}
