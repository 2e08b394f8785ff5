"""Our client and a RocketMQ client that is not ours (ali-ons, pure JavaScript) read each other's messages.

Both talk to the same `orbitmq dev`: what our producer sends, ali-ons' push
consumer receives with tags, keys and body intact; what ali-ons sends, our
push consumer receives with the ids ali-ons reported. Skipped when node or
the ali-ons package (installed by `./run test`) is missing.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from orbitmq.client import ConsumeFromWhere, Message, Producer, PushConsumer
from tests.client.helpers import Collector, create_topic, wait_until

SCRIPT = Path(__file__).parent.parent / "interop" / "roundtrip.js"
COUNT = 20

pytestmark = [pytest.mark.interop, pytest.mark.timeout(90)]


def node_or_skip() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not (SCRIPT.parent / "node_modules" / "ali-ons" / "package.json").exists():
        pytest.skip("ali-ons is not installed (./run test installs it)")
    return node


async def run_roundtrip(node: str, *args: str) -> dict[str, Any]:
    proc = await asyncio.create_subprocess_exec(
        node, str(SCRIPT), *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(SCRIPT.parent)
    )
    out, err = await asyncio.wait_for(proc.communicate(), 80)
    assert out, f"roundtrip.js printed nothing; stderr: {err.decode(errors='replace')[-500:]}"
    report: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    report["returncode"] = proc.returncode
    return report


async def test_ali_ons_consumes_what_our_producer_sends(namesrv: str, names: tuple[str, str, str]) -> None:
    node = node_or_skip()
    topic, pg, cg = names
    sent: dict[str, Message] = {}
    offset_ids: dict[str, str] = {}
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=4)
        for i in range(COUNT):
            msg = Message(topic, f"from python {i} ✓".encode(), tags="TagEven" if i % 2 == 0 else "TagOdd",
                          keys=[f"key-{i}", "py"])
            if i == 0:
                msg.body = msg.body + b"x" * 5000  # compressed on the wire; ali-ons must inflate it
            result = await producer.send(msg)
            sent[msg.body.decode()] = msg
            offset_ids[msg.body.decode()] = result.offset_msg_id
    report = await run_roundtrip(node, "--namesrv", namesrv, "--topic", topic, "--group", cg,
                                 "--produce", "0", "--expect", str(COUNT), "--timeout", "40000")
    assert report["returncode"] == 0, report.get("errors") or report.get("fatal")
    received = {r["body"]: r for r in report["received"]}
    assert set(received) == set(sent)
    for body, got in received.items():
        assert got["tags"] == sent[body].tags
        assert got["keys"] == " ".join(sent[body].keys)
        # ali-ons shows consumers the broker-assigned (offset) message id.
        assert got["msgId"] == offset_ids[body]


async def test_our_consumer_reads_what_ali_ons_sends(namesrv: str, names: tuple[str, str, str]) -> None:
    node = node_or_skip()
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=4)
    report = await run_roundtrip(node, "--namesrv", namesrv, "--topic", topic, "--group", cg + "_js",
                                 "--produce", str(COUNT), "--expect", "0")
    assert report["returncode"] == 0, report.get("errors") or report.get("fatal")
    collector = Collector()
    consumer = PushConsumer(cg, namesrv_addr=namesrv, consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer.subscribe(topic, "TagEven || TagOdd")
    consumer.register_listener(collector)
    await consumer.start()
    try:
        await wait_until(lambda: len(collector.bodies()) >= COUNT, timeout=30)
    finally:
        await consumer.shutdown()
    got = {m.body.decode(): m for m in collector.msgs}
    for item in report["sent"]:
        msg = got[item["body"]]
        assert msg.tags == item["tags"]
        assert msg.keys == item["keys"].split(" ")
        assert msg.msg_id == item["msgId"]


async def test_our_consumer_and_ali_ons_share_one_group_without_overlap(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    node = node_or_skip()
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=4)
        collector = Collector()
        consumer = PushConsumer(cg, namesrv_addr=namesrv,
                                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
        consumer.subscribe(topic, "*")
        consumer.register_listener(collector)
        await consumer.start()
        try:
            js = asyncio.ensure_future(run_roundtrip(
                node, "--namesrv", namesrv, "--topic", topic, "--group", cg, "--produce", "0",
                "--expect", str(COUNT), "--timeout", "12000"))
            # Both members run the same allocation: we keep exactly half of the four queues.
            await wait_until(lambda: sum(1 for mq in consumer.rebalancer.process_queues
                                         if mq.topic == topic) == 2, timeout=30)
            for i in range(COUNT):
                await producer.send(Message(topic, f"shared {i}".encode()))
            report = await js
        finally:
            await consumer.shutdown()
    ours = {m.body.decode() for m in collector.msgs}
    theirs = {r["body"] for r in report["received"]}
    assert ours and theirs
    assert not ours & theirs
    assert ours | theirs == {f"shared {i}" for i in range(COUNT)}
