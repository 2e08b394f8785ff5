"""NamesrvConfig from RocketMQ's namesrv.properties keys, and the properties parser."""

from __future__ import annotations

import pytest

from orbitmq.common.javaprops import parse_properties
from orbitmq.errors import ConfigError
from orbitmq.namesrv.config import NamesrvConfig, format_properties


def test_defaults_match_rocketmq() -> None:
    config = NamesrvConfig()
    assert (config.listen_host, config.listen_port) == ("0.0.0.0", 9876)
    assert config.broker_channel_expired_time_ms == 120_000
    assert config.scan_not_active_broker_interval_ms == 10_000
    assert config.kv_config_path.endswith("namesrv/kvConfig.json")
    assert config.order_message_enable is False


def test_rocketmq_keys_are_accepted() -> None:
    config = NamesrvConfig.from_properties(
        {
            "listenPort": "19876",
            "kvConfigPath": "/data/kv.json",
            "orderMessageEnable": "true",
            "scanNotActiveBrokerInterval": "500",
            "brokerChannelExpiredTime": "2000",
            "listenHost": "127.0.0.1",
        }
    )
    assert config.listen_port == 19876
    assert config.kv_config_path == "/data/kv.json"
    assert config.order_message_enable is True
    assert config.scan_not_active_broker_interval_ms == 500
    assert config.broker_channel_expired_time_ms == 2000
    assert config.listen_host == "127.0.0.1"


def test_unknown_key_is_an_error_that_names_it() -> None:
    with pytest.raises(ConfigError, match="listenPrt"):
        NamesrvConfig.from_properties({"listenPrt": "1"})


def test_malformed_values_are_errors() -> None:
    with pytest.raises(ConfigError, match="listenPort"):
        NamesrvConfig.from_properties({"listenPort": "ninety"})
    with pytest.raises(ConfigError, match="orderMessageEnable"):
        NamesrvConfig.from_properties({"orderMessageEnable": "yes"})
    with pytest.raises(ConfigError, match="listenPort"):
        NamesrvConfig.from_properties({"listenPort": "70000"})
    with pytest.raises(ConfigError, match="brokerChannelExpiredTime"):
        NamesrvConfig.from_properties({"brokerChannelExpiredTime": "0"})


def test_netty_tuning_keys_are_accepted_and_reported_as_ignored() -> None:
    config = NamesrvConfig.from_properties({"serverWorkerThreads": "8", "listenPort": "9876"})
    assert config.ignored_keys == ("serverWorkerThreads",)


def test_runtime_update_refuses_startup_only_keys() -> None:
    config = NamesrvConfig()
    assert config.updated({"orderMessageEnable": "true"}).order_message_enable is True
    with pytest.raises(ConfigError, match="kvConfigPath"):
        config.updated({"kvConfigPath": "/tmp/x"})


def test_to_properties_round_trips() -> None:
    config = NamesrvConfig.from_properties({"listenPort": "1234", "orderMessageEnable": "true"})
    text = format_properties(config.to_properties())
    assert "listenPort=1234\n" in text and "orderMessageEnable=true\n" in text
    again = NamesrvConfig.from_properties(parse_properties(text))
    assert again.to_properties() == config.to_properties()
    # The file UPDATE_NAMESRV_CONFIG writes reads back to the same config.
    saved = format_properties(config.file_properties())
    assert NamesrvConfig.from_properties(parse_properties(saved)) == config


def test_properties_parser_follows_java_rules() -> None:
    text = (
        "# comment\n"
        "! another comment\n"
        "\n"
        "a=1\n"
        "b : 2\n"
        "c 3\n"
        "  d=  spaced value  \n"
        "e=one \\\n"
        "   two\n"
        "f=tab\\tand\\u0041\n"
        "g\\=h=x\n"
        "empty=\n"
        "a=again\n"
    )
    assert parse_properties(text) == {
        "a": "again",
        "b": "2",
        "c": "3",
        "d": "spaced value",  # trailing spaces dropped, unlike Java (see javaprops)
        "e": "one two",
        "f": "tab\tandA",
        "g=h": "x",
        "empty": "",
    }


def test_every_rocketmq_namesrv_key_is_accepted_and_unknown_ones_get_a_suggestion() -> None:
    """NamesrvStartup fills NamesrvConfig and NettyServerConfig with MixAll.properties2Object."""
    from orbitmq.common.keycatalog import NAMESRV_KEYS

    given = {key: spec.default or "x" for key, spec in NAMESRV_KEYS.items()}
    given["listenPort"] = "0"
    config = NamesrvConfig.from_properties(given)
    assert set(config.ignored_keys) == {k for k, s in NAMESRV_KEYS.items() if not s.applied}
    assert set(NAMESRV_KEYS) <= set(config.to_properties())
    with pytest.raises(ConfigError, match="did you mean orderMessageEnable"):
        NamesrvConfig.from_properties({"orderMessageEnabled": "true"})
    with pytest.raises(ConfigError, match="serverSocketBacklog"):
        NamesrvConfig.from_properties({"serverSocketBacklog": "lots"})


def test_the_file_written_back_keeps_tls_key_passwords_that_get_config_never_shows() -> None:
    config = NamesrvConfig.from_properties({"tls.server.keyPassword": "pw", "serverWorkerThreads": "16"})
    assert "tls.server.keyPassword" not in config.to_properties()
    saved = config.file_properties()
    assert saved["tls.server.keyPassword"] == "pw" and saved["serverWorkerThreads"] == "16"
    assert "serverSelectorThreads" not in saved, "keys without effect that nobody set stay out"
    assert NamesrvConfig.from_properties(saved) == config
