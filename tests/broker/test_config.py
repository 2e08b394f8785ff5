"""BrokerConfig from broker.conf keys."""

from __future__ import annotations

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.errors import ConfigError
from orbitmq.store.config import FlushDiskType


def test_broker_conf_keys_fill_broker_and_store_settings() -> None:
    config = BrokerConfig.from_properties(
        {
            "brokerClusterName": "C1",
            "brokerName": "broker-b",
            "brokerId": "0",
            "namesrvAddr": "127.0.0.1:9876;127.0.0.1:9877",
            "listenPort": "10920",
            "brokerIP1": "10.1.2.3",
            "storePathRootDir": "/tmp/x",
            "mapedFileSizeCommitLog": "65536",
            "mapedFileSizeConsumeQueue": "6000",
            "flushDiskType": "SYNC_FLUSH",
            "autoCreateTopicEnable": "false",
            "autoCreateSubscriptionGroup": "false",
            "defaultTopicQueueNums": "4",
            "maxMessageSize": "1024",
            "waitTimeMillsInSendQueue": "300",
            "longPollingEnable": "true",
            "traceTopicEnable": "false",
            "aclEnable": "false",
            "deleteWhen": "04",
        }
    )
    assert config.broker_cluster_name == "C1"
    assert config.namesrv_addrs == ("127.0.0.1:9876", "127.0.0.1:9877")
    assert config.broker_addr == "10.1.2.3:10920"
    assert config.auto_create_topic_enable is False
    assert config.wait_time_mills_in_send_queue == 300
    assert config.store.mapped_file_size_commit_log == 65536
    assert config.store.mapped_file_size_consume_queue == 6000
    assert config.store.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert config.store.max_message_size == 1024


def test_an_unknown_key_is_an_error_that_names_it() -> None:
    with pytest.raises(ConfigError, match="brokerNmae"):
        BrokerConfig.from_properties({"brokerNmae": "x"})


def test_a_malformed_value_is_an_error_that_names_the_key() -> None:
    with pytest.raises(ConfigError, match="listenPort"):
        BrokerConfig.from_properties({"listenPort": "ten"})
    with pytest.raises(ConfigError, match="autoCreateTopicEnable"):
        BrokerConfig.from_properties({"autoCreateTopicEnable": "yes"})
    with pytest.raises(ConfigError, match="namesrvAddr"):
        BrokerConfig.from_properties({"namesrvAddr": "nohostport"})


def test_acl_can_be_turned_on_in_broker_conf_but_not_over_the_wire() -> None:
    config = BrokerConfig.from_properties({"aclEnable": "true", "aclConfigPath": "conf/acl.yml"})
    assert config.acl_enable and config.acl_file.endswith("acl.yml")
    with pytest.raises(ConfigError, match="aclEnable"):
        config.with_properties({"aclEnable": "false"})


def test_runtime_updates_change_broker_keys_but_not_store_keys() -> None:
    config = BrokerConfig()
    updated = config.with_properties({"autoCreateTopicEnable": "false"})
    assert updated.auto_create_topic_enable is False
    with pytest.raises(ConfigError, match="flushDiskType"):
        config.with_properties({"flushDiskType": "SYNC_FLUSH"})


def test_config_lists_itself_under_rocketmq_names() -> None:
    props = BrokerConfig(namesrv_addrs=("a:1", "b:2"), broker_ip1="1.2.3.4").to_properties()
    assert props["namesrvAddr"] == "a:1;b:2"
    assert props["brokerIP1"] == "1.2.3.4"
    assert props["listenPort"] == "10911"
    assert props["flushDiskType"] == "ASYNC_FLUSH"
    assert BrokerConfig.from_properties({k: v for k, v in props.items()}).broker_ip1 == "1.2.3.4"


@pytest.mark.parametrize("key", ["maxSuspendedPulls", "fileReservedTime", "diskMaxUsedSpaceRatio", "listenPort"])
@pytest.mark.parametrize("value", ["../x", "1_000", " 2 3", "\u0663", "9" * 30, "1e3", ""])
def test_numbers_follow_javas_rules_and_refusals_say_so_in_plain_words(key: str, value: str) -> None:
    """A value Java's Long.parseLong refuses is refused here too, naming the key and without Python's
    own exception text (found by the fuzz test through UPDATE_BROKER_CONFIG)."""
    with pytest.raises(ConfigError) as refused:
        BrokerConfig.from_properties({key: value})
    text = str(refused.value)
    assert key in text and "invalid literal" not in text and "base 10" not in text


def test_numbers_with_a_sign_are_whole_numbers_as_in_java() -> None:
    assert BrokerConfig.from_properties({"maxSuspendedPulls": "+12"}).max_suspended_pulls == 12
