"""The per-message hash caches keep short texts only: long client-chosen tags or keys are not pinned."""

from __future__ import annotations

import gc
import tracemalloc

from orbitmq.common.hashing import index_key_hash, java_string_hash, tag_hash_code


def test_distinct_long_tags_and_keys_are_hashed_without_being_kept() -> None:
    tags = [f"{i:06d}" + "t" * 8_000 for i in range(100)]
    keys = [f"{i:06d}" + "k" * 8_000 for i in range(100)]
    tracemalloc.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for tag, key in zip(tags, keys, strict=True):
            assert tag_hash_code(tag) == java_string_hash(tag)
            index_key_hash(key, "T#")
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 512 << 10, f"{held} bytes held after hashing 200 distinct 8 KB texts"
    assert tag_hash_code("TagA") == java_string_hash("TagA") and tag_hash_code("") == 0
