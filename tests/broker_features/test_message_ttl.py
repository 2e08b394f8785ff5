"""Messages that expire, over raw 4.x remoting: ORBITMQ_TTL_MS per message, the topic attribute
orbitmq.ttl.ms as a default, skipped at pull time and counted; across a restart.

The broker's clock is injected: a test moves it forward instead of sleeping until a TTL passes.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from orbitmq.broker.expiry import TOPIC_TTL_ATTRIBUTE
from orbitmq.broker.server import Broker
from orbitmq.common.topic_config import merge_attributes
from orbitmq.metrics.broker import BrokerMetrics
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import props, pull, records, request, send_v2
from tests.broker_features.inproc import addr_of, create_topic, make_config

pytestmark = pytest.mark.timeout(60)


class Clock:
    def __init__(self) -> None:
        self.ahead_ms = 0

    def __call__(self) -> int:
        return time.time_ns() // 1_000_000 + self.ahead_ms


async def pulled(client: RemotingClient, addr: str, topic: str, group: str) -> tuple[list[bytes], int]:
    response = await pull(client, addr, topic, group, 0, max_nums=32)
    bodies = [m.body for m in records(response)] if response.code == ResponseCode.SUCCESS else []
    return bodies, int(response.ext_fields["nextBeginOffset"])


async def test_a_message_past_its_ttl_is_skipped_at_pull_and_counted_once(tmp_path: Path, client: RemotingClient) -> None:
    clock = Clock()
    async with Broker(make_config(tmp_path), clock_ms=clock) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        await create_topic(client, addr, "Plain")
        for body, ttl in ((b"short", "5000"), (b"none", None), (b"long", "60000")):
            extra = {"ORBITMQ_TTL_MS": ttl} if ttl else {}
            response = await send_v2(client, addr, "T", body, props(**extra))
            assert response.code == ResponseCode.SUCCESS, response.remark
        await send_v2(client, addr, "Plain", b"p", props())
        assert broker.topics.get("T").attribute(TOPIC_TTL_ATTRIBUTE) == "0"  # type: ignore[union-attr]
        assert broker.topics.get("Plain").attributes == ()  # type: ignore[union-attr]
        assert await pulled(client, addr, "T", "Early") == ([b"short", b"none", b"long"], 3)
        clock.ahead_ms = 10_000
        assert await pulled(client, addr, "T", "Late") == ([b"none", b"long"], 3)
        assert await pulled(client, addr, "T", "Late") == ([b"none", b"long"], 3)
        assert await pulled(client, addr, "Plain", "Late") == ([b"p"], 1)
        clock.ahead_ms = 120_000
        assert await pulled(client, addr, "T", "Later") == ([b"none"], 3)
        assert broker.stats.expired_counts() == {("Late", "T"): 1, ("Later", "T"): 2}
        family = next(f for f in BrokerMetrics(broker)() if f.name == "orbitmq_expired_messages_total")
        assert sorted((tuple(v), n) for v, n in family.rows) == [(("Late", "T"), 1), (("Later", "T"), 2)]
        bad = await send_v2(client, addr, "T", b"x", props(ORBITMQ_TTL_MS="soon"))
        assert bad.code == ResponseCode.MESSAGE_ILLEGAL and "ORBITMQ_TTL_MS" in (bad.remark or "")


async def test_the_topic_default_ttl_applies_to_messages_without_their_own_across_a_restart(
    tmp_path: Path, client: RemotingClient
) -> None:
    config = make_config(tmp_path)
    clock = Clock()
    async with Broker(config, clock_ms=clock) as broker:
        addr = addr_of(broker)
        fields = {
            "topic": "D", "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6",
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
            "attributes": f"+{TOPIC_TTL_ATTRIBUTE}=3000",
        }
        response = await request(client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
        assert response.code == ResponseCode.SUCCESS, response.remark
        bad = await request(client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC,
                            {**fields, "attributes": f"+{TOPIC_TTL_ATTRIBUTE}=soon"})
        assert bad.code == ResponseCode.SYSTEM_ERROR and TOPIC_TTL_ATTRIBUTE in (bad.remark or "")
        await send_v2(client, addr, "D", b"default", props())
        await send_v2(client, addr, "D", b"own", props(ORBITMQ_TTL_MS="600000"))
        assert await pulled(client, addr, "D", "G") == ([b"default", b"own"], 2)
    clock.ahead_ms = 60_000
    async with Broker(config, clock_ms=clock) as broker:
        addr = addr_of(broker)
        assert await pulled(client, addr, "D", "G2") == ([b"own"], 2)
        assert broker.stats.expired_counts() == {("G2", "D"): 1}


def test_attribute_changes_follow_rocketmq_5s_form() -> None:
    current = (("duplicateDetectionWindowSeconds", "60"),)
    assert merge_attributes(current, "+orbitmq.ttl.ms=5000,-duplicateDetectionWindowSeconds") == \
        (("orbitmq.ttl.ms", "5000"),)
    for bad in ("orbitmq.ttl.ms=2", "+orbitmq.ttl.ms", "-", "+orbitmq.ttl.ms=-1"):
        with pytest.raises(ValueError):
            merge_attributes((), bad)


async def test_with_the_dlq_policy_an_expired_message_goes_to_the_groups_dlq_once(
    tmp_path: Path, client: RemotingClient
) -> None:
    clock = Clock()
    async with Broker(make_config(tmp_path), clock_ms=clock) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "E")
        body = {"groupName": "Keeper", "attributes": {"orbitmq.expired.policy": "DLQ"}}
        response = await request(client, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        assert response.code == ResponseCode.SUCCESS, response.remark
        bad = await request(client, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                            body={"groupName": "Odd", "attributes": {"orbitmq.expired.policy": "KEEP"}})
        assert bad.code == ResponseCode.SYSTEM_ERROR
        await send_v2(client, addr, "E", b"late", props(ORBITMQ_TTL_MS="1000", KEYS="k1"))
        await send_v2(client, addr, "E", b"fine", props())
        clock.ahead_ms = 5_000
        assert await pulled(client, addr, "E", "Keeper") == ([b"fine"], 2)
        assert await pulled(client, addr, "E", "Keeper") == ([b"fine"], 2)  # pulled again: not sent twice
        assert await pulled(client, addr, "E", "Dropper") == ([b"fine"], 2)
        response = await pull(client, addr, "%DLQ%Keeper", "Inspect", 0)
        letters = records(response)
        assert [(m.body, m.properties["RETRY_TOPIC"], m.keys) for m in letters] == [(b"late", "E", ["k1"])]
        assert int(letters[0].properties["ORBITMQ_EXPIRED_AT_MS"]) <= clock()
        assert "%DLQ%Dropper" not in broker.topics
        assert broker.stats.expired_counts() == {("Keeper", "E"): 1, ("Dropper", "E"): 1}
