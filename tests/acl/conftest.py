"""A real `orbitmq dev` with aclEnable=true, its plain_acl.yml and helpers to send signed requests."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from orbitmq.client.acl import AclCredentials, sign_request
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.support.dev import DevServer, start_dev, steady_port

ADMIN = AclCredentials("adminKey01", "adminSecret01")
PUBLISHER = AclCredentials("pubKey0001", "pubSecret01")
CONSUMER = AclCredentials("subKey0001", "subSecret01")

PLAIN_ACL = textwrap.dedent("""\
    globalWhiteRemoteAddresses:
    accounts:
      - accessKey: adminKey01
        secretKey: adminSecret01
        admin: true
      - accessKey: pubKey0001
        secretKey: pubSecret01
        defaultTopicPerm: DENY
        defaultGroupPerm: DENY
        topicPerms:
          - AclPub=PUB
          - AclDeny=DENY
      - accessKey: subKey0001
        secretKey: subSecret01
        defaultTopicPerm: PUB|SUB
        defaultGroupPerm: DENY
        topicPerms:
          - AclDeny=DENY
        groupPerms:
          - AclGroup=SUB
    """)


@dataclass
class AclCluster(DevServer):
    """An `orbitmq dev` with aclEnable=true: its plain_acl.yml and its fast (VIP) listener."""

    acl_file: Path = Path()
    fast_addr: str = ""


def start_acl_dev(root: Path, plain_acl: str = PLAIN_ACL, console: str = "off") -> AclCluster:
    acl_file = root / "conf" / "plain_acl.yml"
    acl_file.parent.mkdir(parents=True, exist_ok=True)
    acl_file.write_text(plain_acl)
    fast_port = steady_port()
    dev = start_dev(root, f"aclEnable=true\naclConfigPath={acl_file}\nfastListenPort={fast_port}\n",
                    console=console)
    return AclCluster(dev.process, dev.namesrv, dev.broker, dev.broker_name, acl_file, f"127.0.0.1:{fast_port}")


@pytest.fixture(scope="module")
def acl_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    """One ACL broker shared by the tests of a module that do not change its file."""
    cluster = start_acl_dev(tmp_path_factory.mktemp("acl"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def own_acl_cluster(tmp_path: Path) -> Iterator[AclCluster]:
    """An ACL broker of this test alone (for tests that edit plain_acl.yml)."""
    cluster = start_acl_dev(tmp_path)
    try:
        yield cluster
    finally:
        cluster.stop()


async def call(
    addr: str,
    code: int,
    fields: dict[str, str] | None = None,
    body: bytes | None = None,
    creds: AclCredentials | None = None,
) -> RemotingCommand:
    """One request, signed with `creds` when given, over a fresh connection."""
    cmd = RemotingCommand.request(code, dict(fields or {}), body)
    if creds is not None:
        sign_request(cmd, creds)
    async with RemotingClient() as client:
        return await client.invoke(addr, cmd, timeout=5.0)
