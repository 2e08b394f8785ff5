"""Every path the store builds stays inside its root, whatever name a request carries (issue 10)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orbitmq.store.paths import UnsafePath, queue_dir, store_path
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import message, small_config

HOSTILE = ["../../victim", "../victim", "..", ".", "", "a/b", "a\\b", "a\x00b", "T/../../../victim", "x" * 128]


async def test_deleting_a_topic_named_like_a_path_removes_nothing_outside_the_store(tmp_path: Path) -> None:
    root = tmp_path / "store"
    victim = tmp_path / "victim"
    victim.mkdir()
    outside = tmp_path / "x"
    outside.mkdir()
    async with DefaultMessageStore(small_config(root)) as store:
        assert (await store.put_message(message(topic="Kept"))).is_ok
        (root / "consumequeue" / "empty").mkdir()
        names = [*HOSTILE, str(victim), str(outside), os.path.relpath(victim, root / "consumequeue")]
        assert store.delete_topics(names) == 0
        assert victim.is_dir() and outside.is_dir()
        assert (root / "consumequeue" / "empty").is_dir()
        assert store.get_max_offset_in_queue("Kept", 0) == 1


async def test_a_put_to_a_topic_named_like_a_path_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    root = tmp_path / "store"
    async with DefaultMessageStore(small_config(root)) as store:
        for name in ["../../victim", "/tmp/victim", "a/b"]:
            msg = message(topic="T")
            msg.topic = name
            refused = await store.put_message(msg)
            assert not refused.is_ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]
    assert list((root / "consumequeue").iterdir()) == []


@pytest.mark.parametrize("name", HOSTILE + ["/abs", "/"])
def test_the_path_helper_refuses_every_name_that_is_not_one_harmless_component(name: str) -> None:
    with pytest.raises(UnsafePath):
        queue_dir("/store/consumequeue", name, 0)
    if len(name) < 128:
        with pytest.raises(UnsafePath):
            store_path("/store", name)


def test_the_path_helper_joins_legal_names_under_the_root() -> None:
    assert queue_dir("/store/consumequeue", "%RETRY%g|x-1_", 3) == "/store/consumequeue/%RETRY%g|x-1_/3"
    assert store_path("/store", "config", "topics.json") == "/store/config/topics.json"
    with pytest.raises(UnsafePath):
        queue_dir("/store/consumequeue", "T", -1)
