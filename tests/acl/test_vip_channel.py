"""Where the VIP ("fast") channel listens, and that a broker without ACL serves sends there."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.errors import ConfigError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient

pytestmark = pytest.mark.timeout(60)


def test_the_vip_port_is_listen_port_minus_two_unless_configured() -> None:
    assert BrokerConfig.from_properties({"listenPort": "10911"}).fast_port == 10909
    assert BrokerConfig.from_properties({"listenPort": "0"}).fast_port is None
    assert BrokerConfig.from_properties({"listenPort": "0", "fastListenPort": "0"}).fast_port == 0
    assert BrokerConfig.from_properties({"listenPort": "10911", "fastChannelEnable": "false"}).fast_port is None
    with pytest.raises(ConfigError, match="fastListenPort"):
        BrokerConfig.from_properties({"fastListenPort": "70000"})


async def test_a_broker_without_acl_serves_the_same_codes_on_the_vip_channel_except_pull(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties({
        "storePathRootDir": str(tmp_path / "store"), "listenPort": "0", "bindAddress": "127.0.0.1",
        "brokerIP1": "127.0.0.1", "fastListenPort": "0",
    })
    async with Broker(config) as broker:
        assert broker.fast_server is not None
        fast = f"127.0.0.1:{broker.fast_server.port}"
        async with RemotingClient() as client:
            info = await client.invoke(fast, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO, {}), 5.0)
            assert info.code == ResponseCode.SUCCESS
            pull = await client.invoke(fast, RemotingCommand.request(RequestCode.PULL_MESSAGE, {}), 5.0)
            assert pull.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
