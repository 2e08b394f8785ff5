"""Cancelling timed messages, over raw 4.x remoting: RocketMQ 5's delete marker (TIMER_DEL_UNIQKEY),
5.3's RECALL_MESSAGE with the send's recall handle, and OrbitMQ's list / cancel / reschedule codes.

Each check that a message never arrives waits for a later sentinel instead: timers are
delivered in time order, so once the sentinel arrived a cancelled one would have too.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from orbitmq.broker.server import Broker
from orbitmq.common.recall import build_recall_handle, parse_recall_handle
from orbitmq.errors import BrokerError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import FLAG_SUBSCRIPTION, FLAG_SUSPEND, props, pull, records, request, send_v2
from tests.broker_features.inproc import addr_of, create_topic, drain, make_config

pytestmark = pytest.mark.timeout(60)


def now_ms() -> int:
    return int(time.time() * 1000)


async def send_timer(client: RemotingClient, addr: str, topic: str, uniq: str, deliver_ms: int) -> RemotingCommand:
    response = await send_v2(
        client, addr, topic, uniq.encode(), props(UNIQ_KEY=uniq, TIMER_DELIVER_MS=str(deliver_ms))
    )
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response


async def bodies_until(client: RemotingClient, addr: str, topic: str, sentinel: bytes, timeout: float = 15) -> list[bytes]:
    """Everything that arrives in queue 0 up to and including `sentinel`."""
    bodies: list[bytes] = []
    offset = 0
    deadline = time.monotonic() + timeout
    while sentinel not in bodies and time.monotonic() < deadline:
        response = await pull(
            client, addr, topic, "G", offset, max_nums=64, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND,
            suspend_ms=1000, timeout=5,
        )
        if response.code == ResponseCode.SUCCESS:
            bodies.extend(m.body for m in records(response))
        offset = int(response.ext_fields.get("nextBeginOffset", offset))
    assert sentinel in bodies, bodies
    return bodies


def test_recall_handles_have_rocketmq_53s_form() -> None:
    handle = build_recall_handle("T", "broker-a", 1000, "ABC")
    import base64

    assert base64.urlsafe_b64decode(handle).decode() == "v1 T broker-a 1001 ABC"
    assert parse_recall_handle(handle) == ("T", "broker-a", 1001, "ABC")
    for bad in ("", "!!!", base64.urlsafe_b64encode(b"v2 T b 1 x").decode(), base64.urlsafe_b64encode(b"v1 T b").decode()):
        with pytest.raises(BrokerError) as info:
            parse_recall_handle(bad)
        assert info.value.code == 604


async def test_a_delete_marker_cancels_its_timer_and_is_never_delivered(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(make_config(tmp_path, timerMaxDelaySec="60")) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        base = now_ms()
        await send_timer(client, addr, "T", "gone", base + 800)
        await send_timer(client, addr, "T", "kept", base + 1200)
        marker = await send_v2(
            client, addr, "T", b"0", props(TIMER_DEL_UNIQKEY="T+gone", TIMER_DELIVER_MS=str(base + 800))
        )
        assert marker.code == ResponseCode.SUCCESS, marker.remark
        assert "recallHandle" not in marker.ext_fields
        assert await bodies_until(client, addr, "T", b"kept") == [b"kept"]
        assert broker.timers is not None and broker.timers.cancelled_count == 1


async def test_a_marker_whose_time_has_passed_is_still_never_delivered(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(make_config(tmp_path, timerMaxDelaySec="60")) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        marker = await send_v2(client, addr, "T", b"0", props(TIMER_DEL_UNIQKEY="T+none", TIMER_DELIVER_MS="1000"))
        assert marker.code == ResponseCode.SUCCESS, marker.remark
        await send_timer(client, addr, "T", "sentinel", now_ms() + 300)
        assert await bodies_until(client, addr, "T", b"sentinel") == [b"sentinel"]


async def test_recall_message_cancels_by_handle_also_across_a_restart(tmp_path: Path, client: RemotingClient) -> None:
    config = make_config(tmp_path, timerMaxDelaySec="60")
    async with Broker(config) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        base = now_ms()
        sent = await send_timer(client, addr, "T", "recalled", base + 1500)
        handle = sent.ext_fields["recallHandle"]
        assert parse_recall_handle(handle) == ("T", config.broker_name, base + 1501, "recalled")
        await send_timer(client, addr, "T", "sentinel", base + 2000)
        wrong_topic = await request(client, addr, RequestCode.RECALL_MESSAGE, {"topic": "TBW102", "recallHandle": handle})
        assert wrong_topic.code == 604 and "topic" in (wrong_topic.remark or "")
        bad = await request(client, addr, RequestCode.RECALL_MESSAGE, {"topic": "T", "recallHandle": "xyz"})
        assert bad.code == 604 and "handle is invalid" in (bad.remark or "")
        recall = await request(
            client, addr, RequestCode.RECALL_MESSAGE,
            {"producerGroup": "PG", "topic": "T", "recallHandle": handle, "bname": config.broker_name},
        )
        assert recall.code == ResponseCode.SUCCESS, recall.remark
        assert recall.ext_fields["msgId"] == "recalled"
    # The broker stops before the recalled timer is due; its marker is in the store.
    async with Broker(config) as broker:
        addr = addr_of(broker)
        assert await bodies_until(client, addr, "T", b"sentinel") == [b"sentinel"]
        late = await request(client, addr, RequestCode.RECALL_MESSAGE, {"topic": "T", "recallHandle": handle})
        assert late.code == 604 and "timestamp" in (late.remark or "")


async def test_list_cancel_and_reschedule_pending_timers(tmp_path: Path, client: RemotingClient) -> None:
    config = make_config(tmp_path, timerMaxDelaySec="60")
    async with Broker(config) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        await create_topic(client, addr, "Other")
        base = now_ms()
        await send_timer(client, addr, "T", "c", base + 30_000)
        await send_timer(client, addr, "T", "a", base + 20_000)
        await send_timer(client, addr, "T", "b", base + 25_000)
        await send_timer(client, addr, "Other", "o", base + 1_000)
        listed = await request(client, addr, RequestCode.LIST_TIMER_MESSAGES, {"topic": "T"})
        assert listed.code == ResponseCode.SUCCESS, listed.remark
        timers = json.loads(listed.body_bytes())["timers"]
        assert [(t["msgId"], t["deliverMs"]) for t in timers] == [
            ("a", base + 20_000), ("b", base + 25_000), ("c", base + 30_000)
        ]
        cancel = await request(client, addr, RequestCode.CANCEL_TIMER_MESSAGE, {"topic": "T", "msgId": "a"})
        assert cancel.code == ResponseCode.SUCCESS, cancel.remark
        missing = await request(client, addr, RequestCode.CANCEL_TIMER_MESSAGE, {"topic": "T", "msgId": "zz"})
        assert missing.code == ResponseCode.QUERY_NOT_FOUND
        move = await request(
            client, addr, RequestCode.RESCHEDULE_TIMER_MESSAGE,
            {"topic": "T", "msgId": "b", "deliverMs": str(now_ms() + 300)},
        )
        assert move.code == ResponseCode.SUCCESS, move.remark
        far = await request(
            client, addr, RequestCode.RESCHEDULE_TIMER_MESSAGE,
            {"topic": "T", "msgId": "c", "deliverMs": str(now_ms() + 3_600_000)},
        )
        assert far.code == ResponseCode.MESSAGE_ILLEGAL
        got = await drain(client, addr, "T", "G", 1, timeout=10)
        assert [(m.body, m.properties["UNIQ_KEY"]) for _, m in got] == [(b"b", "b")]
        listed = await request(client, addr, RequestCode.LIST_TIMER_MESSAGES, {"topic": "T"})
        assert [t["msgId"] for t in json.loads(listed.body_bytes())["timers"]] == ["c"]
    # After a restart "a" stays cancelled and "c" still waits; moved forward, it is the next to arrive.
    async with Broker(config) as broker:
        addr = addr_of(broker)
        listed = await request(client, addr, RequestCode.LIST_TIMER_MESSAGES, {"topic": "T"})
        assert [t["msgId"] for t in json.loads(listed.body_bytes())["timers"]] == ["c"]
        move = await request(
            client, addr, RequestCode.RESCHEDULE_TIMER_MESSAGE,
            {"topic": "T", "msgId": "c", "deliverMs": str(now_ms() + 200)},
        )
        assert move.code == ResponseCode.SUCCESS, move.remark
        got = await drain(client, addr, "T", "G", 2, timeout=10)
        assert [m.body for _, m in got] == [b"b", b"c"]
