"""A RocketMQ client that is not ours: ali-ons (pure JavaScript, RocketMQ 4.x remoting) against `orbitmq dev`.

The Node script produces messages with tags and keys, then consumes them back
with ali-ons' push consumer (clustering mode, offsets kept on the broker).
Skipped, with the reason, only when node/npm or the package cannot be had.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orbitmq.admin.api import AdminClient
from orbitmq.admin.models import TopicConfig
from orbitmq.common.message import MessageExt
from orbitmq.errors import TopicNotExist
from tests.support.dev import DevServer, running_dev

HERE = Path(__file__).parent
SCRIPT = HERE / "roundtrip.js"
COUNT = 200
TOPIC = "InteropAliOns"

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]


def ensure_ali_ons() -> str:
    """Path of `node`, installing node_modules if needed; skips the test when impossible."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed (./run test installs it with npm)")
    if not (HERE / "node_modules" / "ali-ons" / "package.json").exists():
        npm = shutil.which("npm")
        if npm is None:
            pytest.skip("npm is not installed, so ali-ons cannot be installed")
        proc = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--silent"],
            cwd=HERE, capture_output=True, text=True, timeout=120, check=False,
        )
        if proc.returncode != 0:
            pytest.skip(f"npm install of ali-ons failed: {proc.stderr.strip()[-300:]}")
    return node


@pytest.fixture
def dev(tmp_path: Path) -> Iterator[DevServer]:
    with running_dev(tmp_path) as cluster:
        yield cluster


def create_topic(dev: DevServer, topic: str, queues: int) -> None:
    async def main() -> None:
        async with AdminClient([dev.namesrv]) as admin:
            await admin.create_topic(dev.broker_addr, TopicConfig(topic, queues, queues))
            for _ in range(100):
                try:
                    await admin.topic_route(topic)
                    return
                except TopicNotExist:  # the route appears once the broker re-registers
                    await asyncio.sleep(0.1)
            raise AssertionError(f"{topic} never appeared in the NameServer's routes")

    asyncio.run(main())


def run_script(node: str, dev: DevServer, *args: str) -> dict[str, Any]:
    proc = subprocess.run(
        [node, str(SCRIPT), "--namesrv", dev.namesrv, *args],
        cwd=HERE, capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.stdout.strip(), f"no report from the Node script; stderr:\n{proc.stderr[-3000:]}"
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "fatal" not in report, f"{report}\nstderr:\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, f"{report['errors'][:5]}\nstderr:\n{proc.stderr[-3000:]}"
    return report


def test_ali_ons_produces_and_consumes_every_message_with_body_tags_and_keys(dev: DevServer) -> None:
    node = ensure_ali_ons()
    create_topic(dev, TOPIC, 4)
    report = run_script(node, dev, "--topic", TOPIC, "--group", "interop_all", "--produce", str(COUNT),
                        "--expect", str(COUNT))

    sent = {m["body"]: m for m in report["sent"]}
    assert len(sent) == COUNT
    assert all(m["sendStatus"] == "SEND_OK" for m in sent.values())
    received = {m["body"]: m for m in report["received"]}
    assert set(received) == set(sent)
    for body, got in received.items():
        want = sent[body]
        assert got["tags"] == want["tags"], got
        assert got["keys"] == want["keys"], got
        assert got["msgId"] == want["msgId"], got  # ali-ons shows the broker's offset message id
        assert (got["queueId"], got["queueOffset"]) == (want["queueId"], want["queueOffset"])

    # A tag subscription gets exactly the matching half (broker filters by hash, ali-ons by tag).
    even = run_script(node, dev, "--topic", TOPIC, "--group", "interop_even", "--subscribe", "TagEven",
                      "--expect", str(COUNT // 2))
    assert sorted(m["body"] for m in even["received"]) == sorted(
        b for b, m in sent.items() if m["tags"] == "TagEven"
    )

    async def broker_view() -> tuple[list[MessageExt], list[tuple[int, int]]]:
        async with AdminClient([dev.namesrv]) as admin:
            by_key = await admin.query_message(dev.broker_addr, TOPIC, "key-7")
            stats = await admin.consume_stats(dev.broker_addr, "interop_all", TOPIC)
            return by_key, [(q.broker_offset, q.consumer_offset) for q in stats.offset_table.values()]

    # What ali-ons wrote is indexed by key, and the offsets it committed on close are the queue ends.
    by_key, progress = asyncio.run(broker_view())
    assert [m.body.decode() for m in by_key] == ["interop body 7 ✓"]
    assert len(progress) == 4 and all(broker == consumer for broker, consumer in progress), progress


def test_the_broker_takes_back_a_message_ali_ons_failed_and_redelivers_it_through_the_retry_topic(
    dev: DevServer,
) -> None:
    node = ensure_ali_ons()
    create_topic(dev, "InteropRetry", 2)
    # Messages 0 and 5 are refused once (ACTION_RETRY): ali-ons sends CONSUMER_SEND_MSG_BACK with
    # delay level 0, the broker schedules the copy on %RETRY%<group> (level 3, 10 s) and ali-ons,
    # subscribed to that topic, gets it back with reconsumeTimes 1 and the original topic restored.
    report = run_script(node, dev, "--topic", "InteropRetry", "--group", "interop_retry", "--produce", "6",
                        "--expect", "6", "--retry-every", "5", "--timeout", "45000")
    # ali-ons would resend the message itself if the broker refused the send-back; it must not have to.
    assert not [e for e in report["errors"] if "request type 36" in e or "sendMessageBack" in e], report["errors"]
    received = {m["body"]: m for m in report["received"]}
    assert len(received) == 6
    retried = [received[f"interop body {i} ✓"] for i in (0, 5)]
    assert all(m["reconsumeTimes"] == 1 and m["topic"] == "InteropRetry" for m in retried), retried
    assert all(m["reconsumeTimes"] == 0 for m in received.values() if m not in retried)
