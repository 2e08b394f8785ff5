"""Issue 10 item 1 (limits): how many topics clients may create by sending, and how fast."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.broker.autocreate import AutoCreateLimiter
from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import send_v2
from tests.broker_features.inproc import addr_of, create_topic, make_config

pytestmark = pytest.mark.timeout(120)



async def test_no_topic_is_auto_created_once_the_broker_holds_the_configured_count(
    tmp_path: Path, client: RemotingClient
) -> None:
    async with Broker(make_config(tmp_path)) as probe:
        system_topics = len(probe.topics)
    async with Broker(make_config(tmp_path, autoCreateTopicMaxCount=str(system_topics + 3))) as broker:
        addr = addr_of(broker)
        for i in range(3):
            assert (await send_v2(client, addr, f"new-{i}", b"x")).code == ResponseCode.SUCCESS
        refused = await send_v2(client, addr, "new-3", b"x")
        assert refused.code == ResponseCode.TOPIC_NOT_EXIST
        assert f"autoCreateTopicMaxCount={system_topics + 3}" in (refused.remark or "")
        assert "new-3" not in broker.topics
        assert (await send_v2(client, addr, "new-0", b"again")).code == ResponseCode.SUCCESS
        await create_topic(client, addr, "made-by-admin")  # the operator's own creations are not limited
        assert (await send_v2(client, addr, "made-by-admin", b"x")).code == ResponseCode.SUCCESS


async def test_auto_creation_beyond_the_rate_is_answered_system_busy(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(make_config(tmp_path, autoCreateTopicPerMinute="2")) as broker:
        addr = addr_of(broker)
        before = len(broker.topics)
        assert (await send_v2(client, addr, "r-1", b"x")).code == ResponseCode.SUCCESS
        assert (await send_v2(client, addr, "r-2", b"x")).code == ResponseCode.SUCCESS
        busy = await send_v2(client, addr, "r-3", b"x")
        assert busy.code == ResponseCode.SYSTEM_BUSY
        assert (busy.remark or "").startswith("[OVERLOAD]") and "autoCreateTopicPerMinute" in (busy.remark or "")
        assert len(broker.topics) == before + 2
        assert (await send_v2(client, addr, "r-1", b"y")).code == ResponseCode.SUCCESS


def test_the_rate_refills_evenly_over_a_minute() -> None:
    now = [100.0]
    limiter = AutoCreateLimiter(lambda: now[0])
    for _ in range(6):
        assert limiter.refusal("t", 0, 10, 6) is None
        limiter.created()
    assert limiter.refusal("t", 0, 10, 6) is not None
    now[0] += 10.0  # 6 per minute: one more every 10 s
    assert limiter.refusal("t", 0, 10, 6) is None
    limiter.created()
    assert limiter.refusal("t", 0, 10, 6) is not None
    full = limiter.refusal("t", 10, 10, 6)
    assert full is not None and full.code == ResponseCode.TOPIC_NOT_EXIST


def test_the_limits_are_broker_conf_keys() -> None:
    config = BrokerConfig.from_properties({"autoCreateTopicMaxCount": "10", "autoCreateTopicPerMinute": "5"})
    assert (config.auto_create_topic_max_count, config.auto_create_topic_per_minute) == (10, 5)
    with pytest.raises(Exception, match="autoCreateTopicPerMinute must not be negative"):
        BrokerConfig.from_properties({"autoCreateTopicPerMinute": "-5"})
