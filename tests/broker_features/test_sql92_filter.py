"""SQL92 subscriptions at the broker: enablePropertyFilter, refusals, compiled once, and exact matching.

The property-based test sends messages with generated properties to a real
`orbitmq dev` broker once, then pulls them with generated selectors and
compares the broker's choice with the reference evaluator of tests/filter.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from orbitmq.broker.consumers import Subscription
from orbitmq.broker.server import Broker
from orbitmq.broker.sqlfilter import PropertyFilter
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import heartbeat_body, props, pull, records, request, send_v2
from tests.broker_features.inproc import addr_of, create_topic, make_config
from tests.filter.test_sql92 import Tree, reference_matches, render, trees
from tests.support.dev import DevServer

pytestmark = pytest.mark.timeout(120)


def sql_heartbeat(client_id: str, group: str, topic: str, expression: str) -> dict[str, object]:
    body = heartbeat_body(client_id, group, topic)
    sub = body["consumerDataSet"][0]["subscriptionDataSet"][0]  # type: ignore[index]
    sub.update(subString=expression, expressionType="SQL92", subVersion=5)
    return body


async def check_client(client: RemotingClient, addr: str, kind: str, expression: str) -> tuple[int, str]:
    body = {"clientId": "c1", "group": "CG",
            "subscriptionData": {"topic": "T", "subString": expression, "expressionType": kind}}
    response = await request(client, addr, RequestCode.CHECK_CLIENT_CONFIG, body=body)
    return response.code, response.remark or ""


async def test_a_broker_without_property_filters_refuses_sql92_everywhere(
    tmp_path: Path, client: RemotingClient
) -> None:
    async with Broker(make_config(tmp_path)) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        await send_v2(client, addr, "T", b"x", props(a="1"))
        pulled = await pull(client, addr, "T", "CG", 0, subscription="a = 1", expression_type="SQL92")
        assert pulled.code == ResponseCode.SYSTEM_ERROR
        assert "does not support consumer to filter message by SQL92" in (pulled.remark or "")
        assert (await check_client(client, addr, "SQL92", "a = 1"))[0] == ResponseCode.SYSTEM_ERROR
        assert (await check_client(client, addr, "TAG", "*"))[0] == ResponseCode.SUCCESS
        beat = await request(client, addr, RequestCode.HEART_BEAT, body=sql_heartbeat("c1", "CG", "T", "a = 1"))
        assert beat.code == ResponseCode.SYSTEM_ERROR
        tags = await pull(client, addr, "T", "CG", 0, subscription="*")
        assert tags.code == ResponseCode.SUCCESS


async def test_a_bad_selector_is_refused_with_its_parse_error_at_heartbeat_check_and_pull(
    tmp_path: Path, client: RemotingClient
) -> None:
    async with Broker(make_config(tmp_path, enablePropertyFilter="true")) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        beat = await request(client, addr, RequestCode.HEART_BEAT, body=sql_heartbeat("c1", "CG", "T", "a >"))
        assert beat.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and "a >" in (beat.remark or "")
        assert broker.consumers.get("CG") is None
        code, remark = await check_client(client, addr, "SQL92", "a BETWEEN 3 AND 1")
        assert code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and remark
        pulled = await pull(client, addr, "T", "CG", 0, subscription="a = 'x", expression_type="SQL92")
        assert pulled.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED and pulled.remark


async def test_heartbeat_selectors_are_compiled_once_per_version_and_used_by_pulls_without_one(
    tmp_path: Path, client: RemotingClient
) -> None:
    async with Broker(make_config(tmp_path, enablePropertyFilter="true")) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        for size in ("3", "10", "7"):
            await send_v2(client, addr, "T", size.encode(), props(size=size, TAGS="A"))
        beat = await request(client, addr, RequestCode.HEART_BEAT, body=sql_heartbeat("c1", "CG", "T", "size > 5"))
        assert beat.code == ResponseCode.SUCCESS, beat.remark
        response = await pull(client, addr, "T", "CG", 0, sys_flag=0)
        assert [m.body for m in records(response)] == [b"10", b"7"]

        sub = Subscription("T", "size > 5", sub_version=5, expression_type="SQL92")
        first = broker.filters.filter_for("CG", sub)
        again = broker.filters.filter_for("CG", sub)
        assert isinstance(first, PropertyFilter) and isinstance(again, PropertyFilter)
        assert first.selector is again.selector
        newer = broker.filters.filter_for("CG", Subscription("T", "size < 5", sub_version=6, expression_type="SQL92"))
        assert isinstance(newer, PropertyFilter) and newer.selector is not first.selector


# --- property-based: the broker's choice against the reference evaluator ------------------------

VALUES = [str(i) for i in range(-50, 51)] + ["x", "y", "1.5", "-0.5", "abc"]
MESSAGES = 120


def generated_properties(seed: int = 11) -> list[dict[str, str]]:
    rng = random.Random(seed)
    return [{name: rng.choice(VALUES) for name in ("a", "b", "c") if rng.random() < 0.7} for _ in range(MESSAGES)]


class Loaded:
    def __init__(self, addr: str, topic: str, properties: list[dict[str, str]]) -> None:
        self.addr, self.topic, self.properties = addr, topic, properties


@pytest.fixture(scope="module")
def loaded_topic(dev_server: DevServer) -> Loaded:
    addr = dev_server.broker
    properties = generated_properties()

    async def load() -> None:
        async with RemotingClient() as c:
            await create_topic(c, addr, "SqlProps")
            for i, p in enumerate(properties):
                response = await send_v2(c, addr, "SqlProps", str(i).encode(), props(**p))
                assert response.code == ResponseCode.SUCCESS, response.remark

    asyncio.run(load())
    return Loaded(addr, "SqlProps", properties)


async def broker_choice(addr: str, topic: str, expression: str) -> list[int]:
    chosen: list[int] = []
    offset = 0
    async with RemotingClient() as c:
        while offset < MESSAGES:
            response = await pull(c, addr, topic, "SqlGroup", offset, max_nums=64, subscription=expression,
                                  expression_type="SQL92")
            assert response.code in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY,
                                     ResponseCode.PULL_NOT_FOUND), response.remark
            chosen.extend(int(m.body) for m in records(response))
            offset = int(response.ext_fields["nextBeginOffset"])
    return chosen


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tree=trees)
def test_sql92_pulls_return_exactly_the_messages_the_reference_evaluator_selects(
    loaded_topic: Loaded, tree: Tree
) -> None:
    expression = render(tree)
    chosen = asyncio.run(broker_choice(loaded_topic.addr, loaded_topic.topic, expression))
    expected = [i for i, p in enumerate(loaded_topic.properties) if reference_matches(tree, p)]
    assert chosen == expected, expression


async def test_turning_property_filters_on_at_runtime_takes_effect_at_once(
    tmp_path: Path, client: RemotingClient
) -> None:
    async with Broker(make_config(tmp_path)) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        await send_v2(client, addr, "T", b"7", props(size="7"))
        refused = await pull(client, addr, "T", "CG", 0, subscription="size > 5", expression_type="SQL92")
        assert refused.code == ResponseCode.SYSTEM_ERROR
        update = await request(client, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"enablePropertyFilter=true\n")
        assert update.code == ResponseCode.SUCCESS, update.remark
        allowed = await pull(client, addr, "T", "CG", 0, subscription="size > 5", expression_type="SQL92")
        assert [m.body for m in records(allowed)] == [b"7"]
