"""MessageSelector.by_sql with the Python client against `orbitmq dev` (enablePropertyFilter=true)."""

from __future__ import annotations

import asyncio

import pytest

from orbitmq.client import (
    ConsumeResult,
    LitePullConsumer,
    Message,
    MessageExt,
    MessageSelector,
    Producer,
    PushConsumer,
)
from orbitmq.filter.sql92 import SqlParseError
from tests.client.helpers import consumed_everything, create_topic, wait_until

pytestmark = pytest.mark.timeout(60)


def order(i: int) -> Message:
    msg = Message("", f"order-{i}".encode())
    msg.tags = "paid" if i % 2 else "open"
    msg.put_user_property("amount", str(i * 10))
    if i % 3 == 0:
        msg.put_user_property("region", "eu")
    return msg


def selected(i: int) -> bool:
    return i % 3 == 0 and i * 10 > 50


def test_a_selector_that_does_not_parse_is_refused_when_it_is_made() -> None:
    with pytest.raises(SqlParseError):
        MessageSelector.by_sql("amount >")
    with pytest.raises(SqlParseError):
        PushConsumer("G").subscribe("T", MessageSelector.by_sql("region IN ()"))
    assert MessageSelector.by_tag(None) == MessageSelector("TAG", "*")


async def test_push_and_lite_pull_consumers_receive_exactly_the_selected_messages(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    topic, pg, cg = names
    selector = MessageSelector.by_sql("region = 'eu' AND amount > 50")
    got: list[MessageExt] = []

    def listener(msgs: list[MessageExt]) -> ConsumeResult:
        got.extend(msgs)
        return ConsumeResult.CONSUME_SUCCESS

    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        push = PushConsumer(cg, namesrv_addr=namesrv, instance_name="sql-push",
                            consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        push.subscribe(topic, selector)
        push.register_listener(listener)
        lite = LitePullConsumer(cg + "_lite", namesrv_addr=namesrv, instance_name="sql-lite",
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        lite.subscribe(topic, selector)
        await push.start()
        await lite.start()
        try:
            for i in range(30):
                msg = order(i)
                msg.topic = topic
                await producer.send(msg)
            want = {f"order-{i}".encode() for i in range(30) if selected(i)}
            await wait_until(lambda: {m.body for m in got} == want, timeout=20)
            pulled: list[MessageExt] = []
            deadline = asyncio.get_running_loop().time() + 20
            while {m.body for m in pulled} != want and asyncio.get_running_loop().time() < deadline:
                pulled.extend(await lite.poll(timeout=0.5))
            # Both read every stored message: anything unselected would have been delivered.
            await consumed_everything(push)
            await consumed_everything(lite)
        finally:
            await push.shutdown()
            await lite.shutdown()
    assert sorted(m.body for m in got) == sorted(want)
    assert sorted(m.body for m in pulled) == sorted(want)
