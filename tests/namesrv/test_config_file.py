"""`orbitmq namesrv -c FILE`: UPDATE_NAMESRV_CONFIG writes the whole configuration back to FILE
(RocketMQ's NamesrvController persists to configStorePath through Configuration.persist)."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.common.javaprops import parse_properties
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.support.procs import orbitmq_command, start_server

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("store_elsewhere", [False, True])
async def test_update_namesrv_config_is_persisted(tmp_path: Path, store_elsewhere: bool) -> None:
    conf = tmp_path / "namesrv.properties"
    text = f"kvConfigPath={tmp_path / 'kv.json'}\nserverWorkerThreads=8\n"
    target = conf
    if store_elsewhere:
        target = tmp_path / "saved" / "namesrv.properties"
        text += f"configStorePath={target}\n"
    conf.write_text(text)
    server = start_server(orbitmq_command("namesrv", "-c", str(conf), "--listen", "127.0.0.1:0"))
    try:
        async with RemotingClient() as client:
            cmd = RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=true\n")
            done = await client.invoke(server.addr, cmd, 10)
            assert done.code == ResponseCode.SUCCESS, done.remark
            saved = parse_properties(target.read_text())
            assert saved["orderMessageEnable"] == "true" and saved["serverWorkerThreads"] == "8"
            if store_elsewhere:
                assert conf.read_text() == text, "the -c file stays as written when configStorePath is set"
            refused = await client.invoke(server.addr, RemotingCommand.request(
                RequestCode.UPDATE_NAMESRV_CONFIG, None, b"listenPort=1\n"), 10)
            assert refused.code == ResponseCode.SYSTEM_ERROR and "listenPort" in (refused.remark or "")
    finally:
        server.stop()
