"""autoCreateTopicEnable=false takes effect on a store that already holds TBW102."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.broker.server import Broker
from orbitmq.client import Message, Producer
from orbitmq.common import jsonbody
from orbitmq.common.names import PERM_INHERIT, PERM_READ, PERM_WRITE
from orbitmq.errors import TopicNotExist
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import request, send_v2
from tests.broker.test_messaging import make_config
from tests.ha.cluster import broker_conf, start_broker, start_namesrv
from tests.support.procs import ServerProcess

pytestmark = pytest.mark.timeout(60)


async def tbw102_perm(client: RemotingClient, addr: str) -> int:
    table = jsonbody.loads((await request(client, addr, RequestCode.GET_ALL_TOPIC_CONFIG)).body_bytes())
    return int(table["topicConfigTable"]["TBW102"]["perm"])


async def test_a_restart_with_auto_creation_off_strips_inherit_from_a_stored_tbw102(
    tmp_path: Path, client: RemotingClient
) -> None:
    """RocketMQ's TopicConfigManager.createTopicInSendMessageMethod sets TBW102's perm to
    READ|WRITE when autoCreateTopicEnable is false, so a send to a new topic answers
    TOPIC_NOT_EXIST even though topics.json still holds TBW102 with the inherit bit."""
    async with Broker(make_config(tmp_path)) as first:
        assert await tbw102_perm(client, first.broker_addr) == PERM_INHERIT | PERM_READ | PERM_WRITE
    async with Broker(make_config(tmp_path, autoCreateTopicEnable="false")) as b:
        addr = b.broker_addr
        assert await tbw102_perm(client, addr) == PERM_READ | PERM_WRITE
        r = await send_v2(client, addr, "BrandNew", b"x", queue_id=-1)
        assert r.code == ResponseCode.TOPIC_NOT_EXIST, r.remark
        assert "BrandNew" in (r.remark or "") and b.topics.get("BrandNew") is None


async def test_turning_auto_creation_off_at_run_time_refuses_sends_to_new_topics(
    tmp_path: Path, client: RemotingClient
) -> None:
    """UPDATE_BROKER_CONFIG autoCreateTopicEnable=false: the next send to a new topic fails
    as in RocketMQ (TopicConfigManager.createTopicInSendMessageMethod strips TBW102's inherit bit)."""
    async with Broker(make_config(tmp_path)) as b:
        addr = b.broker_addr
        before = await send_v2(client, addr, "Early", b"x", queue_id=-1)
        assert before.code == ResponseCode.SUCCESS, before.remark
        ok = await request(client, addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"autoCreateTopicEnable=false\n")
        assert ok.code == ResponseCode.SUCCESS, ok.remark
        assert await tbw102_perm(client, addr) == PERM_READ | PERM_WRITE
        r = await send_v2(client, addr, "Late", b"x", queue_id=-1)
        assert r.code == ResponseCode.TOPIC_NOT_EXIST, r.remark
        again = await send_v2(client, addr, "Early", b"y", queue_id=-1)
        assert again.code == ResponseCode.SUCCESS, again.remark
    saved = (tmp_path / "store" / "config" / "topics.json").read_text()
    assert jsonbody.loads(saved)["topicConfigTable"]["TBW102"]["perm"] == PERM_READ | PERM_WRITE


async def test_a_producer_sending_to_a_new_topic_fails_once_auto_creation_is_off(
    tmp_path: Path, procs: list[ServerProcess]
) -> None:
    """End to end, as a RocketMQ producer sees it: the route of TBW102 (now READ|WRITE, no
    inherit) still leads the send to the broker, which answers TOPIC_NOT_EXIST
    (TopicConfigManager.createTopicInSendMessageMethod finds no inheritable template)."""
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    first = start_broker(broker_conf(tmp_path, "broker", ns.addr, "ASYNC_MASTER"))
    assert first.stop(timeout=30) == 0  # the store now holds TBW102 with the inherit bit
    procs.append(start_broker(broker_conf(tmp_path, "broker", ns.addr, "ASYNC_MASTER", autoCreateTopicEnable="false")))
    async with Producer("NoAutoPG", namesrv_addr=ns.addr) as producer:
        with pytest.raises(TopicNotExist, match="NeverCreated"):
            await producer.send(Message("NeverCreated", b"x"))
