"""The KV config table and its kvConfig.json file."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from orbitmq.errors import ConfigError
from orbitmq.namesrv.kvconfig import KVConfig, KVConfigFile


def test_put_get_delete_and_namespace_listing() -> None:
    kv = KVConfig()
    assert kv.put("ns", "k", "v") is True
    assert kv.put("ns", "k", "v") is False
    assert kv.get("ns", "k") == "v"
    assert kv.get("ns", "other") is None
    assert kv.namespace("ns") == {"k": "v"}
    assert kv.delete("ns", "k") is True
    assert kv.delete("ns", "k") is False
    assert kv.namespace("ns") is None


def test_file_is_rocketmq_shaped_and_survives_a_reload(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "kvConfig.json"
    store = KVConfigFile(str(path))
    kv = KVConfig()
    kv.put("ORDER_TOPIC_CONFIG", "T", "broker-a:4")
    store.write(kv.to_json())
    assert orjson.loads(path.read_bytes()) == {"configTable": {"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}}}
    assert store.load() == kv


def test_a_second_write_keeps_the_first_as_bak(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    store = KVConfigFile(str(path))
    store.write(b'{"configTable":{"a":{"k":"1"}}}')
    store.write(b'{"configTable":{"a":{"k":"2"}}}')
    assert Path(str(path) + ".bak").read_bytes() == b'{"configTable":{"a":{"k":"1"}}}'
    assert store.load().get("a", "k") == "2"
    assert not Path(str(path) + ".tmp").exists()


def test_a_corrupt_file_falls_back_to_the_bak(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    store = KVConfigFile(str(path))
    store.write(b'{"configTable":{"a":{"k":"1"}}}')
    store.write(b'{"configTable":{"a":{"k":"2"}}}')
    path.write_bytes(b'{"configTable":{"a":')
    assert store.load().get("a", "k") == "1"


def test_a_corrupt_file_without_bak_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "kvConfig.json"
    path.write_bytes(b"not json")
    with pytest.raises(ConfigError, match="unreadable"):
        KVConfigFile(str(path)).load()


def test_a_missing_file_is_an_empty_table(tmp_path: Path) -> None:
    assert KVConfigFile(str(tmp_path / "none.json")).load() == KVConfig()
