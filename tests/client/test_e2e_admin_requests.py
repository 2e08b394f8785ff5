"""Admin questions a broker forwards to a live push consumer: running info (307), direct consumption (309)."""

from __future__ import annotations

import pytest

from orbitmq.client import ConsumeResult, LitePullConsumer, Message, MessageExt, Producer, PushConsumer
from orbitmq.common import jsonbody
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.client.helpers import Collector, create_topic, wait_until

pytestmark = pytest.mark.timeout(90)


class Picky(Collector):
    """Succeeds, asks for later on b"later", raises on b"boom", returns nothing on b"none"."""

    def __call__(self, msgs: list[MessageExt]) -> ConsumeResult:
        body = msgs[0].body
        if body == b"boom":
            raise ValueError("cannot digest boom")
        if body == b"none":
            return None  # type: ignore[return-value]
        super().__call__(msgs)
        return ConsumeResult.RECONSUME_LATER if body == b"later" else ConsumeResult.CONSUME_SUCCESS


@pytest.fixture
def admin(client: RemotingClient) -> RemotingClient:
    """The remoting client that asks the broker as mqadmin would."""
    return client


async def ask(admin: RemotingClient, broker: str, code: int, fields: dict[str, str]) -> RemotingCommand:
    return await admin.invoke(broker, RemotingCommand.request(code, fields), 10.0)


async def test_running_info_describes_the_consumer_its_queues_and_its_progress(
    namesrv: str, names: tuple[str, str, str], admin: RemotingClient
) -> None:
    topic, pg, cg = names
    listener = Collector()
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        for i in range(6):
            await producer.send(Message(topic, f"m{i}".encode(), tags="TagA"))
        consumer = PushConsumer(cg, namesrv_addr=namesrv, instance_name="running-info",
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "TagA || TagB")
        consumer.register_listener(listener)
        async with consumer:
            await wait_until(lambda: len(listener.msgs) == 6)
            broker = consumer.instance.master_addr(next(iter(consumer.instance.broker_addrs)))
            assert broker is not None
            resp = await ask(admin, broker, RequestCode.GET_CONSUMER_RUNNING_INFO,
                             {"consumerGroup": cg, "clientId": consumer.instance.client_id, "jstackEnable": "true"})
            assert resp.code == ResponseCode.SUCCESS, resp.remark
            info = jsonbody.loads(resp.body_bytes())
    assert isinstance(info, dict)
    props = info["properties"]
    assert props["PROP_CONSUME_TYPE"] == "CONSUME_PASSIVELY"
    assert props["PROP_CONSUMEORDERLY"] == "false"
    assert props["PROP_NAMESERVER_ADDR"] == f"{namesrv};"
    assert props["PROP_CLIENT_VERSION"] == "V4_9_7"
    assert int(props["PROP_CONSUMER_START_TIMESTAMP"]) > 0 and int(props["PROP_THREADPOOL_CORE_SIZE"]) > 0
    assert props["consumeFromWhere"] == "CONSUME_FROM_FIRST_OFFSET" and "secretKey" not in props
    subs = {s["topic"]: s for s in info["subscriptionSet"]}
    assert subs[topic]["tagsSet"] == ["TagA", "TagB"] and f"%RETRY%{cg}" in subs
    queues = {(k["topic"], k["queueId"]): v for k, v in jsonbody.object_key_items(info["mqTable"])}
    assert {(topic, 0), (topic, 1)} <= set(queues)
    assert sum(queues[(topic, q)]["commitOffset"] for q in (0, 1)) == 6
    assert all(queues[(topic, q)]["cachedMsgCount"] == 0 and not queues[(topic, q)]["droped"] for q in (0, 1))
    status = info["statusTable"][topic]
    assert status["consumeFailedMsgs"] == 0 and status["consumeOKTPS"] > 0
    assert "Thread" in info["jstack"] or "File" in info["jstack"]


async def test_consume_message_directly_runs_the_listener_and_reports_its_verdict(
    namesrv: str, names: tuple[str, str, str], admin: RemotingClient
) -> None:
    topic, pg, cg = names
    listener = Picky()
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=1)
        consumer = PushConsumer(cg, namesrv_addr=namesrv, instance_name="direct")
        consumer.subscribe(topic, "*")
        consumer.register_listener(listener)
        async with consumer:
            sent = {body: await producer.send(Message(topic, body)) for body in (b"ok", b"later", b"boom", b"none")}
            broker = consumer.instance.master_addr(sent[b"ok"].message_queue.broker_name)
            assert broker is not None
            results = {}
            for body, result in sent.items():
                resp = await ask(admin, broker, RequestCode.CONSUME_MESSAGE_DIRECTLY, {
                    "consumerGroup": cg, "clientId": consumer.instance.client_id, "msgId": result.offset_msg_id})
                assert resp.code == ResponseCode.SUCCESS, resp.remark
                results[body] = jsonbody.loads(resp.body_bytes())
    assert results[b"ok"]["consumeResult"] == "CR_SUCCESS", results[b"ok"]
    assert results[b"ok"]["order"] is False and results[b"ok"]["autoCommit"] is True
    assert results[b"ok"]["spentTimeMills"] >= 0
    assert results[b"later"]["consumeResult"] == "CR_LATER"
    assert results[b"boom"]["consumeResult"] == "CR_THROW_EXCEPTION"
    assert "cannot digest boom" in results[b"boom"]["remark"]
    assert results[b"none"]["consumeResult"] == "CR_RETURN_NULL"
    assert b"ok" in listener.bodies()


async def test_a_lite_pull_consumer_reports_running_info_but_refuses_direct_consumption(
    namesrv: str, names: tuple[str, str, str], admin: RemotingClient
) -> None:
    topic, pg, cg = names
    async with Producer(pg, namesrv_addr=namesrv) as producer:
        await create_topic(producer, topic, queues=2)
        sent = await producer.send(Message(topic, b"pulled"))
        consumer = LitePullConsumer(cg, namesrv_addr=namesrv, instance_name="lite-info",
                                    consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(topic, "*")
        await consumer.start()
        try:
            assert [m.body for m in await consumer.poll(timeout=10)] == [b"pulled"]
            broker = consumer.instance.master_addr(sent.message_queue.broker_name)
            assert broker is not None
            fields = {"consumerGroup": cg, "clientId": consumer.instance.client_id}
            info_resp = await ask(admin, broker, RequestCode.GET_CONSUMER_RUNNING_INFO, fields)
            direct = await ask(admin, broker, RequestCode.CONSUME_MESSAGE_DIRECTLY,
                               {**fields, "msgId": sent.offset_msg_id})
        finally:
            await consumer.shutdown()
    assert info_resp.code == ResponseCode.SUCCESS, info_resp.remark
    info = jsonbody.loads(info_resp.body_bytes())
    assert isinstance(info, dict)
    assert info["properties"]["PROP_CONSUME_TYPE"] == "CONSUME_ACTIVELY"
    assert {k["queueId"] for k, _ in jsonbody.object_key_items(info["mqTable"]) if k["topic"] == topic} == {0, 1}
    assert direct.code == ResponseCode.SYSTEM_ERROR
    assert direct.remark == f"The Consumer Group <{cg}> not exist in this consumer"
