"""Which port the HA listener binds."""

from __future__ import annotations

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.ha import ha_listen_port
from orbitmq.errors import ConfigError


def test_the_ha_port_defaults_to_the_listen_port_plus_one() -> None:
    assert ha_listen_port(BrokerConfig.from_properties({"listenPort": "20911"})) == 20912


def test_an_ephemeral_listen_port_gives_an_ephemeral_ha_port() -> None:
    assert ha_listen_port(BrokerConfig.from_properties({"listenPort": "0"})) == 0


def test_an_explicit_ha_listen_port_wins() -> None:
    config = BrokerConfig.from_properties({"listenPort": "20911", "haListenPort": "30000"})
    assert ha_listen_port(config) == 30000
    assert config.ha_server_addr.endswith(":30000")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("haListenPort", "70000"),
        ("haMasterAddress", "no-port"),
        ("haTransferBatchSize", "0"),
        ("haHousekeepingInterval", "-5"),
        ("haSendHeartbeatInterval", "0"),
        ("haSlaveFallbehindMax", "0"),
    ],
)
def test_an_unusable_ha_setting_is_refused_with_its_name(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key):
        BrokerConfig.from_properties({key: value})


def test_a_slave_with_the_master_broker_id_is_refused() -> None:
    with pytest.raises(ConfigError, match="brokerId"):
        BrokerConfig.from_properties({"brokerRole": "SLAVE", "brokerId": "0"})
