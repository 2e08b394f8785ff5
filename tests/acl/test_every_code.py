"""No request code reaches a handler unchecked: every code the broker serves refuses an unsigned request."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.errors import ConfigError
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.acl.conftest import PLAIN_ACL
from tests.support.dev import steady_port

pytestmark = pytest.mark.timeout(60)


async def test_every_served_code_refuses_an_unsigned_request_on_both_channels(tmp_path: Path) -> None:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(PLAIN_ACL)
    config = BrokerConfig.from_properties({
        "storePathRootDir": str(tmp_path / "store"), "listenPort": "0", "bindAddress": "127.0.0.1",
        "brokerIP1": "127.0.0.1", "aclEnable": "true", "aclConfigPath": str(acl_file),
        "fastListenPort": str(steady_port()),
    })
    broker = Broker(config)
    await broker.start()
    try:
        assert broker.server is not None and broker.fast_server is not None
        main = f"127.0.0.1:{broker.server.port}"
        fast = f"127.0.0.1:{broker.fast_server.port}"
        codes = sorted(broker.server._routes)  # every code with a handler
        assert len(codes) > 40
        async with RemotingClient() as client:
            for addr in (main, fast):
                for code in codes:
                    response = await client.invoke(addr, RemotingCommand.request(code, {"topic": "T"}, b"{}"), 5.0)
                    if addr == fast and response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                        continue  # PULL_MESSAGE is not served on the VIP channel
                    assert response.code == ResponseCode.SYSTEM_ERROR, (addr, code, response.code, response.remark)
                    assert response.remark == "No accessKey is configured", (addr, code, response.remark)
    finally:
        await broker.close()


async def test_a_broker_with_acl_on_and_no_acl_file_does_not_start(tmp_path: Path) -> None:
    config = BrokerConfig.from_properties({
        "storePathRootDir": str(tmp_path / "store"), "listenPort": "0", "bindAddress": "127.0.0.1",
        "aclEnable": "true",
    })
    broker = Broker(config)
    with pytest.raises(ConfigError, match="plain_acl.yml"):
        await broker.start()
    await broker.close()
