"""The console with ACL on: a login with a plain_acl.yml account; admin accounts change things,
other accounts see but cannot change; requests are signed with the logged-in account's keys."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.acl.conftest import ADMIN, CONSUMER, AclCluster, start_acl_dev
from tests.console.conftest import console_url

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def acl_dev(tmp_path: Path) -> Iterator[tuple[AclCluster, str]]:
    cluster = start_acl_dev(tmp_path, console="127.0.0.1:0")
    try:
        yield cluster, console_url(cluster.process)
    finally:
        cluster.process.stop()


async def test_login_is_required_and_read_only_accounts_cannot_change(acl_dev: tuple[AclCluster, str]) -> None:
    _, url = acl_dev
    async with aiohttp.ClientSession() as anonymous:
        async with anonymous.get(f"{url}/api/session") as r:
            assert await r.json() == {"loginRequired": True, "loggedIn": False, "accessKey": "", "admin": False}
        async with anonymous.get(f"{url}/api/topics") as r:
            assert r.status == 401
        async with anonymous.post(f"{url}/api/login", json={"accessKey": ADMIN.access_key,
                                                            "secretKey": "wrongSecret1"}) as r:
            assert r.status == 401
            assert "refuse" in (await r.json())["error"]

    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as reader:
        async with reader.post(f"{url}/api/login", json={"accessKey": CONSUMER.access_key,
                                                         "secretKey": CONSUMER.secret_key}) as r:
            assert r.status == 200
            assert (await r.json())["admin"] is False
        async with reader.get(f"{url}/api/topics", params={"kind": "all"}) as r:
            assert r.status == 200
        async with reader.put(f"{url}/api/topics/ConsoleAclTopic", json={}) as r:
            assert r.status == 403
            assert "read-only" in (await r.json())["error"]
        async with reader.post(f"{url}/api/logout") as r:
            assert r.status == 200
        async with reader.get(f"{url}/api/topics") as r:
            assert r.status == 401

    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as admin:
        async with admin.post(f"{url}/api/login", json={"accessKey": ADMIN.access_key,
                                                        "secretKey": ADMIN.secret_key}) as r:
            assert (await r.json())["admin"] is True
        async with admin.put(f"{url}/api/topics/ConsoleAclTopic", json={"readQueueNums": 1, "writeQueueNums": 1}) as r:
            assert r.status == 200, await r.json()
        async with admin.get(f"{url}/api/topics/ConsoleAclTopic") as r:
            assert [q["writeQueueNums"] for q in (await r.json())["queueDatas"]] == [1]
        async with admin.get(f"{url}/api/acl") as r:
            broker = (await r.json())["brokers"][0]
        assert broker["error"] == ""
        keys = sorted(a["accessKey"] for a in broker["accounts"])
        assert keys == sorted([ADMIN.access_key, CONSUMER.access_key, "pubKey0001"])
        assert all("secretKey" not in a for a in broker["accounts"])
