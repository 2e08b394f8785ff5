"""StoreConfig reads RocketMQ's broker.conf keys and refuses what it does not know."""

from __future__ import annotations

import pytest

from orbitmq.errors import ConfigError
from orbitmq.store.config import BrokerRole, FlushDiskType, StoreConfig


def test_rocketmq_keys_map_to_typed_fields() -> None:
    config = StoreConfig.from_properties(
        {
            "storePathRootDir": "/data/store",
            "flushDiskType": "SYNC_FLUSH",
            "brokerRole": "SLAVE",
            "mappedFileSizeCommitLog": "65536",
            "checkCRCOnRecover": "false",
            "destroyMapedFileIntervalForcibly": "5000",
            "deleteWhen": "04;16",
            "diskMaxUsedSpaceRatio": "80",
        }
    )
    assert config.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert config.broker_role is BrokerRole.SLAVE
    assert config.mapped_file_size_commit_log == 65536
    assert config.check_crc_on_recover is False
    assert config.destroy_mapped_file_interval_forcibly == 5000
    assert config.delete_hours == frozenset({4, 16})
    assert config.commit_log_dir == "/data/store/commitlog"


def test_unknown_key_is_refused_by_name() -> None:
    with pytest.raises(ConfigError, match="flushDiskTipe"):
        StoreConfig.from_properties({"flushDiskTipe": "SYNC_FLUSH"})


@pytest.mark.parametrize(
    "key,value",
    [
        ("mappedFileSizeConsumeQueue", "30"),
        ("deleteWhen", "25"),
        ("flushDiskType", "NEVER"),
        ("checkCRCOnRecover", "yes"),
        ("diskMaxUsedSpaceRatio", "75%"),
        ("mappedFileSizeCommitLog", "4294967296"),  # an int key: Integer.parseInt refuses it
    ],
)
def test_malformed_values_raise_config_error(key: str, value: str) -> None:
    with pytest.raises(ConfigError):
        StoreConfig.from_properties({key: value})


@pytest.mark.parametrize("value,effective", [("99", 95), ("5", 10), ("75", 75)])
def test_disk_max_used_space_ratio_is_a_percentage_clamped_as_rocketmq_does(value: str, effective: int) -> None:
    """MessageStoreConfig.getDiskMaxUsedSpaceRatio clamps to 10..95 instead of refusing the file."""
    assert StoreConfig.from_properties({"diskMaxUsedSpaceRatio": value}).disk_max_used_space_ratio == effective


def test_store_paths_of_consume_queues_and_indexes_can_be_placed_apart(tmp_path: object) -> None:
    config = StoreConfig.from_properties(
        {"storePathRootDir": "/data/store", "storePathConsumeQueue": "/fast/cq", "storePathIndex": "/fast/index"}
    )
    assert (config.consume_queue_dir, config.index_dir) == ("/fast/cq", "/fast/index")
    assert StoreConfig.from_properties({"storePathRootDir": "/data/store"}).index_dir == "/data/store/index"


def test_unknown_key_names_the_nearest_known_one() -> None:
    with pytest.raises(ConfigError, match="did you mean fileReservedTime"):
        StoreConfig.from_properties({"fileReserveTime": "48"})


def test_to_properties_round_trips_through_from_properties() -> None:
    config = StoreConfig(flush_disk_type=FlushDiskType.SYNC_FLUSH, file_reserved_time=1, delete_when="01;02")
    assert StoreConfig.from_properties(config.to_properties()) == config
