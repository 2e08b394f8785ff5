"""Builders shared by the store tests: small configs and messages."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.common.record import iter_records
from orbitmq.store.api import MessageStore
from orbitmq.store.config import FlushDiskType, StoreConfig

STORE_HOST = "10.0.0.1:10911"
BORN_HOST = "10.0.0.2:50000"


def small_config(root: Path, **overrides: Any) -> StoreConfig:
    """A store with tiny files so tests roll over, clean and recover quickly."""
    values: dict[str, Any] = {
        "store_path_root_dir": str(root),
        "mapped_file_size_commit_log": 8 * 1024,
        "mapped_file_size_consume_queue": 20 * 50,
        "max_hash_slot_num": 64,
        "max_index_num": 256,
        "max_message_size": 4096,
        "flush_disk_type": FlushDiskType.ASYNC_FLUSH,
        "flush_interval_commit_log": 50,
        "flush_interval_consume_queue": 50,
        "clean_resource_interval": 3_600_000,
        "delete_commit_log_files_interval": 0,
        "delete_consume_queue_files_interval": 0,
    }
    values.update(overrides)
    return StoreConfig(**values)


def message(
    topic: str = "T",
    body: bytes = b"hello",
    queue_id: int = 0,
    *,
    tags: str | None = "TagA",
    keys: str | None = None,
    properties: dict[str, str] | None = None,
    sys_flag: int = 0,
    born_timestamp: int = 1_700_000_000_000,
) -> MessageExtBrokerInner:
    msg = MessageExtBrokerInner(
        topic=topic, body=body, queue_id=queue_id, sys_flag=sys_flag, born_timestamp=born_timestamp,
        born_host=BORN_HOST, store_host=STORE_HOST,
    )
    if tags is not None:
        msg.properties[mc.TAGS] = tags
    if keys is not None:
        msg.properties[mc.KEYS] = keys
    msg.properties.update(properties or {})
    msg.refresh_properties_string()
    msg.tags_code = tag_hash_code(tags)
    return msg


class FakeClock:
    """A settable millisecond clock."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms

    def advance(self, ms: int) -> None:
        self.now_ms += ms


def pulled(store: MessageStore, queue_id: int = 0) -> list[bytes]:
    """Every record of topic T's queue `queue_id` as group g pulls it from offset 0 on."""
    out: list[bytes] = []
    offset = 0
    while True:
        with store.get_message("g", "T", queue_id, offset, 32) as got:
            if not got.buffers:
                return out
            out.extend(bytes(b) for b in got.buffers)
            offset = got.next_begin_offset


def bodies(store: MessageStore, queue_id: int = 0) -> list[bytes]:
    """The bodies of `pulled(store, queue_id)`."""
    return [bytes(m.body) for b in pulled(store, queue_id) for m in iter_records(b)]
