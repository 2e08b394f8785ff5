"""POP consumption over raw remoting requests, built as RocketMQ 5's Java client builds them."""

from __future__ import annotations

import asyncio
import base64
import time
from pathlib import Path

import pytest

from orbitmq.broker.pop.records import bitset_to_bytes, merge_key
from orbitmq.client.pop import ack, change_invisible, pop
from orbitmq.common import extra_info as xi
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import create_topic, props, request, send_v2
from tests.pop.helpers import addr_of, create_group, pop_all, send, start_broker
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(60)

G = "GID_POP"


async def test_pop_hides_messages_ack_removes_them_and_the_header_is_rocketmqs(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopT", queues=2)
        for i in range(4):
            await send(client, addr, "PopT", f"m{i}".encode(), queue_id=i % 2)
        popped = await pop_all(client, addr, name, G, "PopT", 4, invisible_ms=60_000)
        assert sorted(m.message.body for m in popped.messages) == [b"m0", b"m1", b"m2", b"m3"]
        header = popped.header
        assert header is not None and 0 <= header.revive_qid < 8 and header.invisible_time == 60_000
        assert header.start_offset_info and header.msg_offset_info
        for m in popped.messages:
            info = xi.parse_extra_info(m.extra_info)
            assert (info.kind, info.broker_name, info.offset) == (0, name, m.message.queue_offset)
            assert m.real_topic == "PopT" and m.reconsume_times == 0
        # Hidden: nothing more to pop.
        assert (await pop(client, addr, name, G, "PopT")).status == "NO_NEW_MSG"
        for m in popped.messages:
            await ack(client, addr, G, m)
        assert broker.pop is not None and len(broker.pop.inflight) == 0


async def test_an_unacked_message_comes_back_from_the_retry_topic_with_one_more_reconsume_time(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopR", queues=1)
        await send(client, addr, "PopR", b"again", tags="TagA")
        await send(client, addr, "PopR", b"acked")
        first = await pop_all(client, addr, name, G, "PopR", 2, invisible_ms=1000)
        assert len(first.messages) == 2
        for m in first.messages:
            if m.message.body == b"acked":
                await ack(client, addr, G, m)
        again = await pop_all(client, addr, name, G, "PopR", 1, invisible_ms=60_000)
        assert [m.message.body for m in again.messages] == [b"again"]
        retried = again.messages[0]
        assert retried.message.topic == "PopR"  # shown under the original topic
        assert retried.real_topic == xi.pop_retry_topic(G, "PopR") == f"%RETRY%{G}_PopR"
        assert retried.message.reconsume_times == 1 and retried.message.tags == "TagA"
        assert retried.message.properties.get("RETRY_TOPIC") == "PopR"
        assert retried.message.properties.get("UNIQ_KEY") == first.messages[0].message.properties.get("UNIQ_KEY")
        assert xi.parse_extra_info(retried.extra_info).kind == xi.RETRY_TOPIC_V1
        await ack(client, addr, G, retried)
        assert (await pop(client, addr, name, G, "PopR", poll_ms=1500)).status == "NO_NEW_MSG"


async def test_change_invisible_time_rearms_and_only_the_new_handle_acks(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopC", queues=1)
        await send(client, addr, "PopC", b"renewed")
        await send(client, addr, "PopC", b"nacked")
        popped = await pop_all(client, addr, name, G, "PopC", 2, invisible_ms=1500)
        by_body = {m.message.body: m for m in popped.messages}
        renewed = await change_invisible(client, addr, G, by_body[b"renewed"], 60_000)
        assert xi.parse_extra_info(renewed.extra_info).ck_offset == by_body[b"renewed"].message.queue_offset
        nacked = await change_invisible(client, addr, G, by_body[b"nacked"], 0)
        await ack(client, addr, G, by_body[b"nacked"])  # the old handle: a no-op
        back = await pop_all(client, addr, name, G, "PopC", 1, invisible_ms=60_000)
        assert [m.message.body for m in back.messages] == [b"nacked"]
        assert back.messages[0].message.reconsume_times == 1
        await ack(client, addr, G, renewed)
        await ack(client, addr, G, back.messages[0])
        await ack(client, addr, G, nacked)  # stale by now: accepted, nothing happens
        assert (await pop(client, addr, name, G, "PopC", poll_ms=2500)).status == "NO_NEW_MSG"


async def test_after_retry_max_times_the_message_goes_to_the_dlq(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_group(client, addr, G, retry_max_times=1)
        await create_topic(client, addr, "PopD", queues=1)
        await send(client, addr, "PopD", b"poison")
        first = await pop_all(client, addr, name, G, "PopD", 1, invisible_ms=1000)
        second = await pop_all(client, addr, name, G, "PopD", 1, invisible_ms=1000)
        assert [m.message.reconsume_times for m in first.messages + second.messages] == [0, 1]
        dlq = f"%DLQ%{G}"

        async def dead() -> int:
            response = await request(client, addr, RequestCode.GET_MAX_OFFSET, {"topic": dlq, "queueId": "0"})
            return int(response.field("offset") or 0) if response.code == ResponseCode.SUCCESS else 0

        deadline = time.monotonic() + 15
        while await dead() < 1:
            assert time.monotonic() < deadline, "the message never reached the DLQ"
            await asyncio.sleep(0.1)
        assert (await pop(client, addr, name, G, "PopD", poll_ms=1500)).status == "NO_NEW_MSG"


async def test_a_parked_pop_is_answered_when_a_message_arrives(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopL", queues=4)
        parked = asyncio.ensure_future(pop(client, addr, name, G, "PopL", poll_ms=20_000))

        async def polling() -> int:
            response = await request(client, addr, RequestCode.POLLING_INFO,
                                     {"consumerGroup": G, "topic": "PopL", "queueId": "-1"})
            assert response.code == ResponseCode.SUCCESS, response.remark
            return int(response.field("pollingNum") or 0)

        deadline = time.monotonic() + 10
        while await polling() < 1:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        await send(client, addr, "PopL", b"wake", queue_id=3)
        popped = await asyncio.wait_for(parked, 10)
        assert [m.message.body for m in popped.messages] == [b"wake"]


async def test_tag_expressions_filter_and_skip(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopF", queues=1)
        for tag in ("A", "B", "A", "C"):
            await send(client, addr, "PopF", tag.encode(), tags=tag)
        popped = await pop_all(client, addr, name, G, "PopF", 3, timeout=3, exp="A || C")
        assert [m.message.body for m in popped.messages] == [b"A", b"A", b"C"]


async def test_sql92_expressions_filter(tmp_path: Path) -> None:
    async with start_broker(tmp_path, enablePropertyFilter="true") as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopS", queues=1)
        for level in (1, 5, 2, 9):
            response = await send_v2(client, addr, "PopS", str(level).encode(), props(WAIT="true", level=str(level)))
            assert response.code == ResponseCode.SUCCESS, response.remark
        popped = await pop_all(client, addr, name, G, "PopS", 2, timeout=3, exp_type="SQL92", exp="level > 4")
        assert [m.message.body for m in popped.messages] == [b"5", b"9"]
        bad = await client.invoke(addr, RemotingCommand.request(RequestCode.POP_MESSAGE, {
            "consumerGroup": G, "topic": "PopS", "queueId": "-1", "maxMsgNums": "1", "invisibleTime": "60000",
            "pollTime": "0", "bornTime": str(int(time.time() * 1000)), "initMode": "0", "expType": "SQL92",
            "exp": "level >",
        }), 5)
        assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_fifo_pops_hold_the_queue_until_acked_and_redeliver_in_order(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopO", queues=1)
        for i in range(3):
            await send(client, addr, "PopO", f"o{i}".encode())
        first = await pop(client, addr, name, G, "PopO", order=True, max_nums=2, invisible_ms=1200)
        assert [m.message.body for m in first.messages] == [b"o0", b"o1"]
        assert first.header is not None and first.header.revive_qid == xi.FIFO_REVIVE_QID
        # Held: the rest of the queue waits while the batch is out.
        assert (await pop(client, addr, name, G, "PopO", order=True)).status == "NO_NEW_MSG"
        await ack(client, addr, G, first.messages[1])
        # o0 expires: it comes back first, counted, and o1 (acked) is not delivered again.
        again = await pop(client, addr, name, G, "PopO", order=True, poll_ms=5000, invisible_ms=1200)
        assert [m.message.body for m in again.messages] == [b"o0", b"o2"]
        assert [m.reconsume_times for m in again.messages] == [1, 0]
        assert [m.message.reconsume_times for m in again.messages] == [1, 0]  # also in the records
        # Expiring once more: o1 stays acked.
        again = await pop(client, addr, name, G, "PopO", order=True, poll_ms=5000, invisible_ms=60_000)
        assert [(m.message.body, m.reconsume_times) for m in again.messages] == [(b"o0", 2), (b"o2", 1)]
        for m in again.messages:
            await ack(client, addr, G, m)
        assert (await pop(client, addr, name, G, "PopO", order=True)).status == "NO_NEW_MSG"


async def test_batch_ack_acks_by_bitset(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopB", queues=1)
        for i in range(3):
            await send(client, addr, "PopB", f"b{i}".encode())
        popped = await pop_all(client, addr, name, G, "PopB", 3, invisible_ms=60_000)
        info = xi.parse_extra_info(popped.messages[0].extra_info)
        entry = {"b": base64.b64encode(bitset_to_bytes([0, 2])).decode(), "c": G, "it": info.invisible_time,
                 "pt": info.pop_time, "q": 0, "r": "0", "rq": info.revive_qid, "so": info.ck_offset, "t": "PopB"}
        response = await request(client, addr, RequestCode.BATCH_ACK_MESSAGE, None,
                                 {"acks": [entry], "brokerName": name})
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert broker.pop is not None
        ck = broker.pop.inflight.get(merge_key("PopB", G, 0, info.ck_offset, info.pop_time, name))
        assert ck is not None and ck.open_offsets() == [info.ck_offset + 1]
        empty = await request(client, addr, RequestCode.BATCH_ACK_MESSAGE, None, {"acks": []})
        assert empty.code == ResponseCode.NO_MESSAGE


async def test_bad_input_gets_rocketmqs_codes_and_the_broker_keeps_serving(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopX", queues=2)
        await send(client, addr, "PopX", b"x")

        async def raw(code: int, **fields: str) -> RemotingCommand:
            return await client.invoke(addr, RemotingCommand.request(code, fields), 5)

        now = str(int(time.time() * 1000))
        pop_fields = {"consumerGroup": G, "topic": "PopX", "queueId": "-1", "maxMsgNums": "1",
                      "invisibleTime": "60000", "pollTime": "0", "bornTime": now, "initMode": "0"}
        assert (await raw(RequestCode.POP_MESSAGE, **{**pop_fields, "maxMsgNums": "33"})).code == 29
        assert (await raw(RequestCode.POP_MESSAGE, **{**pop_fields, "queueId": "7"})).code == 29
        assert (await raw(RequestCode.POP_MESSAGE, **{**pop_fields, "topic": "Nope"})).code == 17
        assert (await raw(RequestCode.POP_MESSAGE, **{**pop_fields, "topic": "../x"})).code == 1
        late = {**pop_fields, "bornTime": str(int(now) - 60_000)}
        assert (await raw(RequestCode.POP_MESSAGE, **late)).code == ResponseCode.POLLING_TIMEOUT
        missing = dict(pop_fields)
        del missing["invisibleTime"]
        response = await raw(RequestCode.POP_MESSAGE, **missing)
        assert response.code == 1 and "invisibleTime" in (response.remark or "")

        popped = await pop_all(client, addr, name, G, "PopX", 1)
        handle = popped.messages[0].extra_info
        info = xi.parse_extra_info(handle)
        ack_fields = {"consumerGroup": G, "topic": "PopX", "queueId": str(info.queue_id), "extraInfo": handle,
                      "offset": str(info.offset)}
        forged = {**ack_fields, "extraInfo": "garbage"}
        for code in (RequestCode.ACK_MESSAGE, RequestCode.CHANGE_MESSAGE_INVISIBLETIME):
            extra = {"invisibleTime": "1000"} if code == RequestCode.CHANGE_MESSAGE_INVISIBLETIME else {}
            response = await raw(code, **forged, **extra)
            assert response.code == ResponseCode.MESSAGE_ILLEGAL and "extraInfo" in (response.remark or "")
            assert (await raw(code, **{**ack_fields, **extra, "offset": "999"})).code == ResponseCode.NO_MESSAGE
            assert (await raw(code, **{**ack_fields, **extra, "queueId": "9"})).code == ResponseCode.MESSAGE_ILLEGAL
            assert (await raw(code, **{**ack_fields, **extra, "topic": "Nope"})).code == ResponseCode.TOPIC_NOT_EXIST
        # A well-formed handle of another pop (forged popTime) is accepted and changes nothing.
        other = str(xi.ExtraInfo(info.ck_offset, info.pop_time + 1, info.invisible_time, info.revive_qid, 0, name,
                                 info.queue_id, info.offset))
        assert (await raw(RequestCode.ACK_MESSAGE, **{**ack_fields, "extraInfo": other})).code == 0
        assert broker.pop is not None and len(broker.pop.inflight) == 1
        assert (await raw(RequestCode.ACK_MESSAGE, **ack_fields)).code == 0
        assert len(broker.pop.inflight) == 0
        bad_body = await client.invoke(addr, RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, {}, b"{nope"), 5)
        assert bad_body.code == ResponseCode.MESSAGE_ILLEGAL
        # Nobody may write checkpoints into the revive topic (a forged one would re-put any message).
        revive = f"rmq_sys_REVIVE_LOG_{broker.config.broker_cluster_name}"
        forged_ck = await send_v2(client, addr, revive, b'{"so":0}', props(TAGS="ck"))
        assert forged_ck.code == ResponseCode.NO_PERMISSION
        # Still serving.
        await send(client, addr, "PopX", b"y")
        assert len((await pop_all(client, addr, name, G, "PopX", 1)).messages) == 1


async def test_peek_and_notification_change_nothing(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopP", queues=1)
        note = {"consumerGroup": G, "topic": "PopP", "queueId": "-1", "pollTime": "0",
                "bornTime": str(int(time.time() * 1000))}
        response = await request(client, addr, RequestCode.NOTIFICATION, note)
        assert response.code == 0 and response.field("hasMsg") == "false"
        peek = {"consumerGroup": G, "topic": "PopP", "queueId": "0", "maxMsgNums": "4"}
        assert (await request(client, addr, RequestCode.PEEK_MESSAGE, peek)).code == ResponseCode.PULL_NOT_FOUND
        await send(client, addr, "PopP", b"p")
        response = await request(client, addr, RequestCode.NOTIFICATION, note)
        assert response.code == 0 and response.field("hasMsg") == "true"
        peeked = await request(client, addr, RequestCode.PEEK_MESSAGE, peek)
        assert peeked.code == 0 and peeked.body and b"p" in peeked.body_bytes()
        popped = await pop_all(client, addr, name, G, "PopP", 1)
        assert [m.message.body for m in popped.messages] == [b"p"]


async def test_a_pop_that_found_its_queue_busy_is_woken_when_the_holder_is_done(tmp_path: Path) -> None:
    # SYNC_FLUSH: the first pop holds the queue while its checkpoint is flushed; the second one,
    # arriving meanwhile, skips the busy queue and parks, and must not wait out its whole poll.
    async with start_broker(tmp_path, flushDiskType="SYNC_FLUSH") as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopZ", queues=1)
        await send(client, addr, "PopZ", b"z1")
        await send(client, addr, "PopZ", b"z2")
        # Polls far longer than the requests' own timeout: only a wake-up answers the second one in time.
        first, second = await asyncio.gather(
            pop(client, addr, name, G, "PopZ", max_nums=1, poll_ms=60_000, timeout=10),
            pop(client, addr, name, G, "PopZ", max_nums=1, poll_ms=60_000, timeout=10),
        )
        assert sorted(m.message.body for m in first.messages + second.messages) == [b"z1", b"z2"]


async def test_parked_pops_are_bounded_per_queue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import orbitmq.broker.pop.service as service_module

    monkeypatch.setattr(service_module, "MAX_POP_POLLING_PER_KEY", 1)
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopFull", queues=1)
        parked = asyncio.ensure_future(pop(client, addr, name, G, "PopFull", poll_ms=20_000))
        assert broker.pop is not None
        service = broker.pop

        async def parked_one() -> bool:
            return service.polling_num(G, "PopFull", -1) == 1

        await until(parked_one)
        assert (await pop(client, addr, name, G, "PopFull", poll_ms=20_000)).status == "POLLING_FULL"
        await send(client, addr, "PopFull", b"f")
        assert [m.message.body for m in (await asyncio.wait_for(parked, 10)).messages] == [b"f"]


async def test_settled_checkpoints_move_the_revive_offsets_to_the_end(tmp_path: Path) -> None:
    from orbitmq.broker.pop.service import REVIVE_GROUP, REVIVE_QUEUE_NUM

    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopE", queues=2)
        for i in range(6):
            await send(client, addr, "PopE", b"e", queue_id=i % 2)
        for _ in range(3):  # three pops: three checkpoints in different revive queues
            popped = await pop(client, addr, name, G, "PopE", max_nums=2)
            for m in popped.messages:
                await ack(client, addr, G, m)
        pop_service, store = broker.pop, broker.store
        assert pop_service is not None and store is not None
        topic = pop_service.revive_topic

        async def settled() -> bool:
            return all(
                broker.offsets.query(REVIVE_GROUP, topic, q) == store.get_max_offset_in_queue(topic, q)
                for q in range(REVIVE_QUEUE_NUM)
            )

        await until(settled)
        assert sum(store.get_max_offset_in_queue(topic, q) for q in range(REVIVE_QUEUE_NUM)) >= 6  # CKs and acks


async def test_a_revived_message_wakes_a_parked_pop(tmp_path: Path) -> None:
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopW", queues=2)
        await send(client, addr, "PopW", b"w")
        first = await pop_all(client, addr, name, G, "PopW", 1, invisible_ms=1000)
        assert len(first.messages) == 1
        # Parked far longer than the request's own timeout: only the retry topic's arrival answers it in time.
        back = await pop(client, addr, name, G, "PopW", poll_ms=60_000, timeout=10)
        assert [(m.message.body, m.message.reconsume_times) for m in back.messages] == [(b"w", 1)]


async def test_a_retry_topic_name_too_long_keeps_the_message_in_flight(tmp_path: Path) -> None:
    group = "G" * 110  # "%RETRY%" + group + "_" + topic is past the 127-character topic limit
    async with start_broker(tmp_path) as broker, RemotingClient() as client:
        addr, name = addr_of(broker), broker.config.broker_name
        await create_topic(client, addr, "PopLongName", queues=1)
        await send(client, addr, "PopLongName", b"kept")
        popped = await pop_all(client, addr, name, group, "PopLongName", 1, invisible_ms=500)
        info = xi.parse_extra_info(popped.messages[0].extra_info)
        service = broker.pop
        assert service is not None
        ck = service.inflight.get(merge_key("PopLongName", group, 0, info.ck_offset, info.pop_time, name))
        assert ck is not None

        async def tried() -> bool:
            return ck.re_put >= 1

        await until(tried)
        assert xi.pop_retry_topic(group, "PopLongName") not in broker.topics
        assert service.inflight.get(ck.key) is ck  # not lost: tried again later
