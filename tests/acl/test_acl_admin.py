"""mqadmin's ACL commands edit plain_acl.yml, and a changed file is picked up without a restart."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from orbitmq.client.acl import AclCredentials
from orbitmq.remoting.codes import RequestCode, ResponseCode
from tests.acl.conftest import ADMIN, CONSUMER, AclCluster, call
from tests.support.procs import eventually

pytestmark = pytest.mark.timeout(60)


def mqadmin(
    cluster: AclCluster, *args: str, creds: AclCredentials | None = ADMIN, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    keys = ["--accessKey", creds.access_key, "--secretKey", creds.secret_key] if creds else []
    clean = {k: v for k, v in os.environ.items() if k not in ("ROCKETMQ_HOME", "ORBITMQ_ACCESS_KEY", "ORBITMQ_SECRET_KEY")}
    return subprocess.run(
        [sys.executable, "-m", "orbitmq", "admin", *keys, *args, "-n", cluster.namesrv],
        check=False, capture_output=True, text=True, timeout=30, env={**clean, **(env or {})},
    )


def accounts(cluster: AclCluster) -> dict[str, dict[str, object]]:
    doc = yaml.safe_load(cluster.acl_file.read_text())
    return {a["accessKey"]: a for a in doc["accounts"]}


async def eventually_code(cluster: AclCluster, creds: AclCredentials | None, want_success: bool) -> None:
    deadline = time.monotonic() + 10
    while True:
        response = await call(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=creds)
        if (response.code == ResponseCode.SUCCESS) == want_success:
            return
        assert time.monotonic() < deadline, f"still {response.code} {response.remark}"
        await asyncio.sleep(0.1)


async def test_the_mqadmin_acl_commands_update_the_file_and_take_effect_at_once(own_acl_cluster: AclCluster) -> None:
    cluster = own_acl_cluster
    fresh = AclCredentials("newUser001", "newSecret01")
    done = mqadmin(cluster, "updateAclConfig", "-b", cluster.broker, "-a", fresh.access_key, "-s", fresh.secret_key,
                   "-i", "PUB", "-u", "SUB", "-t", "AclT1=SUB,AclT2=DENY", "-g", "G1=SUB")
    assert done.returncode == 0, done.stderr
    assert "success" in done.stdout and fresh.secret_key not in done.stdout
    saved = accounts(cluster)[fresh.access_key]
    assert saved["topicPerms"] == ["AclT1=SUB", "AclT2=DENY"] and saved["groupPerms"] == ["G1=SUB"]
    assert saved["defaultTopicPerm"] == "PUB" and saved["admin"] is False
    ok = await call(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=fresh)
    assert ok.code == ResponseCode.SUCCESS, ok.remark

    version = mqadmin(cluster, "clusterAclConfigVersion", "-c", "DefaultCluster")
    assert version.returncode == 0, version.stderr
    assert cluster.broker in version.stdout and " 1 " in version.stdout

    config = mqadmin(cluster, "getAclConfig", "-b", cluster.broker)
    assert config.returncode == 0 and fresh.access_key in config.stdout

    deleted = mqadmin(cluster, "deleteAclConfig", "-b", cluster.broker, "-a", fresh.access_key)
    assert deleted.returncode == 0, deleted.stderr
    assert fresh.access_key not in accounts(cluster)
    gone = await call(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=fresh)
    assert gone.code == ResponseCode.SYSTEM_ERROR and "No acl config" in (gone.remark or "")


def test_mqadmin_acl_commands_are_refused_without_an_admin_account(own_acl_cluster: AclCluster) -> None:
    cluster = own_acl_cluster
    before = cluster.acl_file.read_text()
    as_user = mqadmin(cluster, "updateAclConfig", "-b", cluster.broker, "-a", CONSUMER.access_key, "-m", "true",
                      creds=CONSUMER)
    assert as_user.returncode == 1 and "Need admin permission" in as_user.stderr
    unsigned = mqadmin(cluster, "updateGlobalWhiteAddr", "-b", cluster.broker, "-g", "*", creds=None)
    assert unsigned.returncode == 1 and "No accessKey" in unsigned.stderr
    half = mqadmin(cluster, "getAclConfig", "-b", cluster.broker, creds=None, env={"ORBITMQ_ACCESS_KEY": "x"})
    assert half.returncode == 2
    bad = mqadmin(cluster, "updateAclConfig", "-b", cluster.broker, "-a", "short", "-s", "secret12345")
    assert bad.returncode == 1 and "longer than 6" in bad.stderr
    typo = mqadmin(cluster, "updateAclConfig", "-b", cluster.broker, "-a", "someone001", "-t", "topicA=READ")
    assert typo.returncode == 2
    assert cluster.acl_file.read_text() == before


async def test_a_global_white_address_restricts_addresses_and_still_needs_a_signature(
    own_acl_cluster: AclCluster,
) -> None:
    cluster = own_acl_cluster
    done = mqadmin(cluster, "updateGlobalWhiteAddr", "-b", cluster.broker, "-g", "10.0.0.*,127.0.0.1")
    assert done.returncode == 0, done.stderr
    # Whitelisted, but unsigned: still refused (RocketMQ 4.x would let it in, as admin).
    assert (await call(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO)).code == ResponseCode.SYSTEM_ERROR
    assert (await call(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=ADMIN)).code == ResponseCode.SUCCESS
    done = mqadmin(cluster, "updateGlobalWhiteAddr", "-b", cluster.broker, "-g", "10.0.0.*")
    assert done.returncode == 0, done.stderr
    # Loopback is no longer listed: even a signed admin request is refused.
    outside = await call(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=ADMIN)
    assert outside.code == ResponseCode.NO_PERMISSION and "globalWhiteRemoteAddresses" in (outside.remark or "")


async def test_white_address_skips_signature_restores_the_rocketmq_4_whitelist(own_acl_cluster: AclCluster) -> None:
    cluster = own_acl_cluster
    doc = yaml.safe_load(cluster.acl_file.read_text())
    doc["whiteAddressSkipsSignature"] = True
    doc["globalWhiteRemoteAddresses"] = ["127.0.0.1"]
    cluster.acl_file.write_text(yaml.safe_dump(doc))
    await eventually_code(cluster, None, want_success=True)
    # As in 4.x the whitelisted address may do what only an admin may.
    fields = {"accessKey": "whiteMade01", "secretKey": "whiteMade01", "admin": "true"}
    made = await call(cluster.broker, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, fields)
    assert made.code == ResponseCode.SUCCESS, made.remark


async def test_a_changed_plain_acl_yml_is_picked_up_without_restart(own_acl_cluster: AclCluster) -> None:
    cluster = own_acl_cluster
    doc = yaml.safe_load(cluster.acl_file.read_text())
    doc["accounts"].append({"accessKey": "handEdited1", "secretKey": "handSecret1", "whiteRemoteAddress": "127.0.0.1"})
    cluster.acl_file.write_text(yaml.safe_dump(doc))
    await eventually_code(cluster, AclCredentials("handEdited1", "handSecret1"), want_success=True)
    # A matching whiteRemoteAddress does not stand in for the signature.
    wrong = await call(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=AclCredentials("handEdited1", "wrong"))
    assert wrong.code == ResponseCode.SYSTEM_ERROR and "Check signature failed" in (wrong.remark or "")
    # A broken file is ignored: the rules loaded before stay in force.
    cluster.acl_file.write_text("accounts: [this is: not: valid")
    eventually(lambda: any("not reloaded" in line for line in list(cluster.process.output)),
               message="the broker did not report the broken ACL file")
    assert (await call(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO, creds=ADMIN)).code == ResponseCode.SUCCESS
    assert (await call(cluster.broker, RequestCode.GET_BROKER_RUNTIME_INFO)).code == ResponseCode.SYSTEM_ERROR


def test_mqadmin_reads_keys_from_rocketmq_home_conf_tools_yml(own_acl_cluster: AclCluster, tmp_path: Path) -> None:
    cluster = own_acl_cluster
    home = tmp_path / "rocketmq_home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "tools.yml").write_text(f"accessKey: {ADMIN.access_key}\nsecretKey: {ADMIN.secret_key}\n")
    done = mqadmin(cluster, "clusterAclConfigVersion", "-b", cluster.broker, creds=None, env={"ROCKETMQ_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    (home / "conf" / "tools.yml").write_text("accessKey: [unclosed\n")
    broken = mqadmin(cluster, "clusterAclConfigVersion", "-b", cluster.broker, creds=None, env={"ROCKETMQ_HOME": str(home)})
    assert broken.returncode == 2 and "tools.yml" in broken.stderr
