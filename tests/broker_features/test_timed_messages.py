"""Timed messages in an in-process broker: delivery at a time, the horizon, and the send-path rules."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker.server import Broker
from orbitmq.broker.timer.props import TIMER_TOPIC
from orbitmq.broker.timer.service import TimerService
from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.transport import RemotingClient
from orbitmq.store.store import DefaultMessageStore
from tests.broker.helpers import props, send_v2
from tests.broker_features.inproc import addr_of, create_topic, drain, make_config
from tests.store.helpers import small_config

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with Broker(make_config(tmp_path, timerMaxDelaySec="60")) as b:
        yield b


async def test_messages_asking_for_a_time_arrive_at_it_in_time_order(broker: Broker, client: RemotingClient) -> None:
    addr = addr_of(broker)
    await create_topic(client, addr, "Timed")
    now = int(time.time() * 1000)
    asks = [
        props(TIMER_DELIVER_MS=str(now + 1500), n="a"),
        props(TIMER_DELAY_MS="700", n="b"),
        props(TIMER_DELAY_SEC="1", n="c", TAGS="x"),
    ]
    for ask in asks:
        response = await send_v2(client, addr, "Timed", b"t", ask)
        assert response.code == ResponseCode.SUCCESS, response.remark
    assert broker.store is not None
    assert broker.store.get_max_offset_in_queue(TIMER_TOPIC, 0) == 3
    got = await drain(client, addr, "Timed", "G", 3, timeout=10)
    assert [m.properties["n"] for _, m in got] == ["b", "c", "a"]
    for arrived, msg in got:
        due = int(msg.properties["TIMER_OUT_MS"])
        assert msg.store_timestamp >= due
        assert arrived * 1000 - due < 1000
        assert not {"TIMER_DELIVER_MS", "TIMER_DELAY_MS", "TIMER_DELAY_SEC"} & set(msg.properties)
        assert msg.properties["REAL_TOPIC"] == "Timed"
    assert got[1][1].tags == "x"


async def test_a_time_already_reached_is_delivered_at_once(broker: Broker, client: RemotingClient) -> None:
    addr = addr_of(broker)
    await create_topic(client, addr, "Past")
    response = await send_v2(client, addr, "Past", b"now", props(TIMER_DELIVER_MS="1000", DELAY="3"))
    assert response.code == ResponseCode.SUCCESS
    assert broker.store is not None
    assert broker.store.get_max_offset_in_queue("Past", 0) == 1
    stored = broker.store.look_message_by_offset(broker.store.get_commit_log_offset_in_queue("Past", 0, 0))
    assert stored is not None and "DELAY" not in stored.properties


async def test_times_beyond_the_horizon_or_malformed_are_refused_as_illegal(
    broker: Broker, client: RemotingClient
) -> None:
    addr = addr_of(broker)
    await create_topic(client, addr, "Far")
    far = props(TIMER_DELIVER_MS=str(int(time.time() * 1000) + 61_000))
    for ask in (far, props(TIMER_DELAY_SEC="61"), props(TIMER_DELAY_MS="later"), props(TIMER_DELAY_MS="-5")):
        response = await send_v2(client, addr, "Far", b"x", ask)
        assert response.code == ResponseCode.MESSAGE_ILLEGAL
        assert "timer" in (response.remark or "")
    assert broker.store is not None
    assert broker.store.get_max_offset_in_queue(TIMER_TOPIC, 0) == 0


async def test_a_time_wins_over_a_delay_level_and_both_kinds_coexist(broker: Broker, client: RemotingClient) -> None:
    addr = addr_of(broker)
    await create_topic(client, addr, "Both")
    await send_v2(client, addr, "Both", b"level", props(DELAY="1"))
    await send_v2(client, addr, "Both", b"timer", props(DELAY="3", TIMER_DELAY_MS="300"))
    got = await drain(client, addr, "Both", "G", 2, timeout=10)
    assert [m.body for _, m in got] == [b"timer", b"level"]


async def test_pending_timers_are_delivered_after_a_clean_restart(tmp_path: Path, client: RemotingClient) -> None:
    config = make_config(tmp_path)
    async with Broker(config) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "Later")
        await send_v2(client, addr, "Later", b"soon", props(TIMER_DELAY_MS="200"))
        await send_v2(client, addr, "Later", b"after-restart", props(TIMER_DELAY_MS="2500"))
        got = await drain(client, addr, "Later", "G", 1, timeout=5)
        assert [m.body for _, m in got] == [b"soon"]
    async with Broker(config) as broker:
        got = await drain(client, addr_of(broker), "Later", "G", 3, timeout=5)
        assert [m.body for _, m in got] == [b"soon", b"after-restart"]


async def test_a_timer_waiting_longer_than_the_roll_age_is_stored_again_and_delivered_once(tmp_path: Path) -> None:
    store = DefaultMessageStore(small_config(tmp_path / "store", mapped_file_size_commit_log=1 << 20))
    await store.start()
    timers = TimerService(store, str(tmp_path / "config"), lambda: "127.0.0.1:10911", max_delay_ms=60_000,
                          roll_after_ms=300, roll_check_interval_ms=100)
    store.add_dispatch_listener(timers.notify)
    await timers.start()
    try:
        now = int(time.time() * 1000)
        msg = MessageExtBrokerInner(topic="Real", body=b"patient", properties={"TIMER_DELIVER_MS": str(now + 1500)},
                                    store_host="127.0.0.1:10911", born_host="127.0.0.1:5000")
        assert timers.rewrite(msg)
        msg.refresh_properties_string()
        assert (await store.put_message(msg)).is_ok
        deadline = time.monotonic() + 5
        while store.get_max_offset_in_queue("Real", 0) == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        assert store.get_max_offset_in_queue(TIMER_TOPIC, 0) >= 2
        assert store.get_max_offset_in_queue("Real", 0) == 1
        delivered = store.look_message_by_offset(store.get_commit_log_offset_in_queue("Real", 0, 0))
        assert delivered is not None and delivered.body == b"patient"
        assert delivered.store_timestamp >= now + 1500
    finally:
        await timers.close()
        await store.close()
