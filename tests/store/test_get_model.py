"""get_message against a model: whatever the queue holds, a read returns exactly the matching
messages between the requested offset and next_begin_offset, in order, within the limits."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.record import iter_records
from orbitmq.store.api import GetMessageStatus, MessageStore
from orbitmq.store.config import StoreConfig
from orbitmq.store.memory import MemoryMessageStore
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import message, small_config

TAGS = ["A", "B", "C"]


class TagFilter:
    def __init__(self, tags: set[str]) -> None:
        self.codes = {tag_hash_code(t) for t in tags}

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return tags_code in self.codes

    def is_matched_by_commit_log(self, record: memoryview, properties: Mapping[str, str] | None) -> bool:
        return True


puts = st.lists(st.tuples(st.integers(0, 1), st.sampled_from(TAGS), st.integers(0, 700)), min_size=1, max_size=80)
reads = st.lists(
    st.tuples(st.integers(0, 1), st.integers(-2, 90), st.integers(1, 40), st.sets(st.sampled_from(TAGS))),
    min_size=1, max_size=15,
)


async def check(
    root: Path,
    put_list: list[tuple[int, str, int]],
    read_list: list[tuple[int, int, int, set[str]]],
    make_store: Callable[[StoreConfig], MessageStore],
) -> None:
    config = small_config(
        root, max_transfer_count_on_message_in_memory=8, max_transfer_bytes_on_message_in_memory=3000
    )
    model: dict[int, list[tuple[str, bytes]]] = {0: [], 1: []}
    store = make_store(config)
    await store.start()
    try:
        for i, (queue_id, tag, size) in enumerate(put_list):
            body = f"{i}:".encode() + b"x" * size
            assert (await store.put_message(message(body=body, queue_id=queue_id, tags=tag))).is_ok
            model[queue_id].append((tag, body))
        for queue_id, offset, max_nums, tags in read_list:
            held = model[queue_id]
            message_filter = TagFilter(tags) if tags else None
            with store.get_message("g", "T", queue_id, offset, max_nums, message_filter) as got:
                assert got.max_offset == len(held) and got.min_offset == 0
                if not held:
                    assert got.status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE)
                    continue
                if offset < 0:
                    assert (got.status, got.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, 0)
                    continue
                if offset >= len(held):
                    assert got.status in (GetMessageStatus.OFFSET_OVERFLOW_ONE, GetMessageStatus.OFFSET_OVERFLOW_BADLY)
                    continue
                bodies = [r.body for r in iter_records(b"".join(got.buffers))]
                assert len(bodies) == got.message_count <= min(max_nums, 8)
                assert got.buffer_total_size <= 3000 or got.message_count == 1
                end = got.next_begin_offset
                assert offset < end <= len(held)
                expected = [b for tag, b in held[offset:end] if message_filter is None or tag in tags]
                assert bodies == expected, "every matching message in the scanned range, in order"
                assert got.queue_offsets == [
                    q for q in range(offset, end) if message_filter is None or held[q][0] in tags
                ]
                assert (got.status is GetMessageStatus.FOUND) == bool(bodies)
    finally:
        await store.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(put_list=puts, read_list=reads)
def test_reads_return_exactly_the_matching_messages_of_the_scanned_range(
    put_list: list[tuple[int, str, int]], read_list: list[tuple[int, int, int, set[str]]]
) -> None:
    for make_store in (DefaultMessageStore, MemoryMessageStore):  # every MessageStore
        with tempfile.TemporaryDirectory() as root:
            asyncio.run(check(Path(root), put_list, read_list, make_store))
