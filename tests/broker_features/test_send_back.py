"""CONSUMER_SEND_MSG_BACK against an in-process broker: retry topic, delay, dead letters, refusals."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker import retry
from orbitmq.broker.server import Broker
from orbitmq.common import names
from orbitmq.common.message import MessageExt
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import props, pull, records, send_v2
from tests.broker_features.inproc import addr_of, create_topic, drain, make_config

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with Broker(make_config(tmp_path)) as b:
        yield b


async def send_back(
    client: RemotingClient, addr: str, offset: int, group: str = "CG", delay_level: int = 0,
    max_times: int | None = None, version: int = 400,
) -> RemotingCommand:
    fields = {"offset": str(offset), "group": group, "delayLevel": str(delay_level), "originMsgId": "X",
              "originTopic": "T", "unitMode": "false"}
    if max_times is not None:
        fields["maxReconsumeTimes"] = str(max_times)
    cmd = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, fields)
    cmd.version = version
    return await client.invoke(addr, cmd, 5.0)


async def consumed(client: RemotingClient, addr: str, topic: str = "T") -> MessageExt:
    msgs = records(await pull(client, addr, topic, "CG", 0))
    assert len(msgs) == 1
    return msgs[0]


def test_the_broker_chooses_level_three_plus_reconsume_times_until_retries_are_used_up() -> None:
    assert retry.decide("G", 0, 16, 0, 1) == retry.RetryTarget("%RETRY%G", 1, 3)
    assert retry.decide("G", 4, 16, 0, 2) == retry.RetryTarget("%RETRY%G", 2, 7)
    assert retry.decide("G", 2, 16, 5, 1).delay_level == 5
    assert retry.decide("G", 16, 16, 0, 1) == retry.RetryTarget("%DLQ%G", 1, 0)
    assert retry.decide("G", 0, 16, -1, 1).dead
    assert retry.max_reconsume_times(16, 3, 400) == 3
    assert retry.max_reconsume_times(16, 3, 100) == 16
    assert retry.max_reconsume_times(16, None, 400) == 16


async def test_a_returned_message_comes_back_through_the_retry_topic_after_its_delay(
    broker: Broker, client: RemotingClient
) -> None:
    addr = addr_of(broker)
    await create_topic(client, addr, "T")
    await send_v2(client, addr, "T", b"hello", props(TAGS="A", UNIQ_KEY="U1", k="v"))
    original = await consumed(client, addr)
    response = await send_back(client, addr, original.commit_log_offset, delay_level=1)
    assert response.code == ResponseCode.SUCCESS, response.remark
    retry_config = broker.topics.get("%RETRY%CG")
    assert retry_config is not None and retry_config.perm == 6 and retry_config.read_queue_nums == 1
    assert broker.store is not None
    assert broker.store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, 0) == 1

    got = await drain(client, addr, "%RETRY%CG", "CG", 1, timeout=5)
    msg = got[0][1]
    assert msg.body == b"hello" and msg.tags == "A"
    assert msg.reconsume_times == 1
    assert msg.properties["RETRY_TOPIC"] == "T"
    assert msg.properties["ORIGIN_MESSAGE_ID"] == original.offset_msg_id
    assert msg.properties["UNIQ_KEY"] == "U1" and msg.properties["k"] == "v"
    assert msg.born_timestamp == original.born_timestamp

    # A second return keeps the first topic and the first id.
    again = await send_back(client, addr, msg.commit_log_offset, delay_level=1)
    assert again.code == ResponseCode.SUCCESS
    got = await drain(client, addr, "%RETRY%CG", "CG", 2, timeout=5)
    second = got[1][1]
    assert second.reconsume_times == 2
    assert second.properties["RETRY_TOPIC"] == "T"
    assert second.properties["ORIGIN_MESSAGE_ID"] == original.offset_msg_id


async def test_used_up_retries_or_a_negative_level_go_to_the_dead_letter_queue_at_once(
    broker: Broker, client: RemotingClient
) -> None:
    addr = addr_of(broker)
    await create_topic(client, addr, "T")
    await send_v2(client, addr, "T", b"poison", props(TAGS="A"), j="2")
    original = await consumed(client, addr)
    assert (await send_back(client, addr, original.commit_log_offset, max_times=2)).code == ResponseCode.SUCCESS
    assert (await send_back(client, addr, original.commit_log_offset, delay_level=-1)).code == ResponseCode.SUCCESS
    dlq = broker.topics.get("%DLQ%CG")
    assert dlq is not None and dlq.perm == 6 and dlq.read_queue_nums == dlq.write_queue_nums == 1
    dead = records(await pull(client, addr, "%DLQ%CG", "CG", 0))
    assert [(m.body, m.reconsume_times, m.properties["RETRY_TOPIC"]) for m in dead] == [(b"poison", 3, "T")] * 2
    assert "DELAY" not in dead[0].properties
    assert broker.store is not None
    assert all(broker.store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, q) == 0 for q in range(3))
    # An old client's own maximum is not trusted: the group's 16 applies.
    old = await send_back(client, addr, original.commit_log_offset, max_times=2, version=100, delay_level=1)
    assert old.code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, 0) == 1


async def test_send_back_refusals_carry_rocketmqs_codes(tmp_path: Path, client: RemotingClient) -> None:
    config = make_config(tmp_path, autoCreateSubscriptionGroup="false")
    async with Broker(config) as broker:
        addr = addr_of(broker)
        missing_group = await send_back(client, addr, 0, group="Nobody")
        assert missing_group.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    async with Broker(make_config(tmp_path / "b")) as broker:
        addr = addr_of(broker)
        missing = await send_back(client, addr, 123_456)
        assert missing.code == ResponseCode.SYSTEM_ERROR and "123456" in (missing.remark or "")
        bad = RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "CG", "delayLevel": "0"})
        assert (await client.invoke(addr, bad, 5.0)).code == ResponseCode.SYSTEM_ERROR
    async with Broker(make_config(tmp_path / "c", brokerPermission="4")) as broker:
        refused = await send_back(client, addr_of(broker), 0)
        assert refused.code == ResponseCode.NO_PERMISSION
