"""Issue 10 item 8: suspended pulls are capped broker-wide and per connection.

The attack: many connections each parking thousands of pulls with the SUSPEND
flag on an empty queue (20 x 4,096 held 300-700 MB). Pulls beyond the caps are
answered SYSTEM_BUSY ("[OVERLOAD]...") at once instead of parking, the broker
keeps serving other requests, and parked pulls still get their messages.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import FLAG_SUBSCRIPTION, FLAG_SUSPEND, request, send_v2
from tests.broker_features.inproc import addr_of, create_topic, make_config

pytestmark = pytest.mark.timeout(120)



def suspended_pull(topic: str, offset: int = 0) -> RemotingCommand:
    fields = {
        "consumerGroup": "CG", "topic": topic, "queueId": "0", "queueOffset": str(offset), "maxMsgNums": "32",
        "sysFlag": str(FLAG_SUBSCRIPTION | FLAG_SUSPEND), "commitOffset": "0", "suspendTimeoutMillis": "30000",
        "subscription": "*", "subVersion": "0", "expressionType": "TAG",
    }
    return RemotingCommand.request(RequestCode.PULL_MESSAGE, fields)


async def until(check: object, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def test_pulls_beyond_the_caps_are_answered_system_busy_and_the_parked_ones_still_deliver(
    tmp_path: Path, clients: list[RemotingClient]
) -> None:
    config = make_config(tmp_path, maxSuspendedPulls="50", maxSuspendedPullsPerConnection="30")
    async with Broker(config) as broker:
        addr = addr_of(broker)
        await create_topic(clients[0], addr, "T")
        first = [clients[0].invoke_async(addr, suspended_pull("T"), timeout=40) for _ in range(40)]
        await until(lambda: len(broker.waiters) == 30 and sum(f.done() for f in first) == 10)
        assert {f.result().code for f in first if f.done()} == {ResponseCode.SYSTEM_BUSY}
        remark = next(f.result().remark for f in first if f.done()) or ""
        assert remark.startswith("[OVERLOAD]") and "maxSuspendedPullsPerConnection=30" in remark

        second = [clients[1].invoke_async(addr, suspended_pull("T"), timeout=40) for _ in range(40)]
        await until(lambda: len(broker.waiters) == 50 and sum(f.done() for f in second) == 20)
        busy = [f.result() for f in second if f.done()]
        assert {r.code for r in busy} == {ResponseCode.SYSTEM_BUSY}
        assert "maxSuspendedPulls=50" in (busy[0].remark or "")

        # The broker still answers ordinary requests, and the parked pulls get the message.
        offset = await request(clients[1], addr, RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": "0"})
        assert offset.code == ResponseCode.SUCCESS
        sent = await send_v2(clients[1], addr, "T", b"hello")
        assert sent.code == ResponseCode.SUCCESS
        parked = [f for f in first + second if not f.done()]
        assert len(parked) == 50
        answers = await asyncio.gather(*parked)
        assert {a.code for a in answers} == {ResponseCode.SUCCESS}
        assert len(broker.waiters) == 0
        # Slots free again: a new suspended pull parks instead of being refused.
        again = clients[0].invoke_async(addr, suspended_pull("T", offset=1), timeout=40)
        await until(lambda: len(broker.waiters) == 1)
        assert not again.done()


def test_the_caps_are_broker_conf_keys_that_must_not_be_negative() -> None:
    config = BrokerConfig.from_properties({"maxSuspendedPulls": "7", "maxSuspendedPullsPerConnection": "3"})
    assert (config.max_suspended_pulls, config.max_suspended_pulls_per_connection) == (7, 3)
    defaults = BrokerConfig()
    assert defaults.max_suspended_pulls == 16_384 and defaults.max_suspended_pulls_per_connection == 2_048
    with pytest.raises(Exception, match="maxSuspendedPulls must not be negative"):
        BrokerConfig.from_properties({"maxSuspendedPulls": "-1"})
