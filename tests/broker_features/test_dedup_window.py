"""The duplicate window of idempotent sends (broker/dedup.py), driven with raw 4.x requests.

A retried send carries the UNIQ_KEY of its first attempt: within the topic's window the broker
answers the first send's result instead of storing it again.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from orbitmq.broker.dedup import DuplicateWindow, Stored, id_key
from orbitmq.broker.server import Broker
from orbitmq.client.batch import encode_batch
from orbitmq.client.message import Message
from orbitmq.common import properties as mc
from orbitmq.common.topic_config import DUPLICATE_WINDOW_ATTRIBUTE, TopicConfig, merge_attributes
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import props, request, send_v2
from tests.broker_features.inproc import addr_of, make_config

pytestmark = pytest.mark.timeout(60)

UNIQ = mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX


def uid(n: int) -> str:
    return f"7F00000100002A9F0000{n:012X}"


async def create_topic(client: RemotingClient, addr: str, topic: str, attributes: str = "", queues: int = 2) -> None:
    fields = {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues), "writeQueueNums": str(queues),
        "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
    }
    if attributes:
        fields["attributes"] = attributes
    response = await request(client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def stored_count(client: RemotingClient, addr: str, topic: str, queues: int = 2) -> int:
    total = 0
    for q in range(queues):
        response = await request(client, addr, RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(q)})
        total += int(response.field("offset") or 0)
    return total


def answer(response: RemotingCommand) -> tuple[str | None, str | None, str | None]:
    assert response.code == ResponseCode.SUCCESS, response.remark
    return response.field("msgId"), response.field("queueId"), response.field("queueOffset")


async def send_batch(client: RemotingClient, addr: str, topic: str, ids: list[str], queue_id: int) -> RemotingCommand:
    msgs = []
    for i in ids:
        m = Message(topic, f"body {i}".encode())
        m.unique_key = i
        msgs.append(m)
    body = b"".join(encode_batch(msgs))
    return await send_v2(client, addr, topic, body, props(WAIT="true"), queue_id=queue_id,
                         code=RequestCode.SEND_BATCH_MESSAGE)


async def test_a_second_send_with_the_same_id_answers_the_first_and_survives_a_restart(tmp_path: Path) -> None:
    config = make_config(tmp_path, duplicateDetectionWindowSeconds="60")
    async with Broker(config) as broker, RemotingClient() as client:
        addr = addr_of(broker)
        await create_topic(client, addr, "Idem")
        first = answer(await send_v2(client, addr, "Idem", b"one", props(**{UNIQ: uid(1)}), queue_id=0))
        # The retry goes to another queue, as a client's retry does: the id counts per topic.
        again = answer(await send_v2(client, addr, "Idem", b"one", props(**{UNIQ: uid(1)}), queue_id=1))
        other = answer(await send_v2(client, addr, "Idem", b"two", props(**{UNIQ: uid(2)}), queue_id=1))
        assert again == first
        assert other != first
        assert await stored_count(client, addr, "Idem") == 2
        # The same id on another topic is another message.
        await create_topic(client, addr, "Idem2")
        answer(await send_v2(client, addr, "Idem2", b"one", props(**{UNIQ: uid(1)})))
        assert await stored_count(client, addr, "Idem2") == 1
    async with Broker(config) as broker, RemotingClient() as client:
        addr = addr_of(broker)
        after = answer(await send_v2(client, addr, "Idem", b"one", props(**{UNIQ: uid(1)}), queue_id=1))
        assert after == first
        assert await stored_count(client, addr, "Idem") == 2


async def test_window_off_stores_every_send(tmp_path: Path) -> None:
    async with Broker(make_config(tmp_path)) as broker, RemotingClient() as client:
        addr = addr_of(broker)
        await create_topic(client, addr, "Plain")
        a = answer(await send_v2(client, addr, "Plain", b"one", props(**{UNIQ: uid(1)})))
        b = answer(await send_v2(client, addr, "Plain", b"one", props(**{UNIQ: uid(1)})))
        assert a != b
        assert await stored_count(client, addr, "Plain") == 2
        # The topic attribute turns it on for one topic, and off again.
        await create_topic(client, addr, "Plain", f"+{DUPLICATE_WINDOW_ATTRIBUTE}=30")
        c = answer(await send_v2(client, addr, "Plain", b"one", props(**{UNIQ: uid(3)})))
        assert answer(await send_v2(client, addr, "Plain", b"one", props(**{UNIQ: uid(3)}))) == c
        await create_topic(client, addr, "Plain", f"-{DUPLICATE_WINDOW_ATTRIBUTE}")
        answer(await send_v2(client, addr, "Plain", b"one", props(**{UNIQ: uid(3)})))
        assert await stored_count(client, addr, "Plain") == 4


async def test_a_bad_attribute_is_refused_with_a_remark(tmp_path: Path) -> None:
    async with Broker(make_config(tmp_path)) as broker, RemotingClient() as client:
        fields = {"topic": "T", "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1",
                  "perm": "6", "order": "false", "attributes": f"+{DUPLICATE_WINDOW_ATTRIBUTE}=soon"}
        response = await request(client, addr_of(broker), RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert DUPLICATE_WINDOW_ATTRIBUTE in (response.remark or "")


async def test_batches_answer_stored_items_and_store_only_new_ones(tmp_path: Path) -> None:
    config = make_config(tmp_path, duplicateDetectionWindowSeconds="60")
    async with Broker(config) as broker, RemotingClient() as client:
        addr = addr_of(broker)
        await create_topic(client, addr, "B")
        first = answer(await send_batch(client, addr, "B", [uid(1), uid(2), uid(3)], 0))
        assert answer(await send_batch(client, addr, "B", [uid(1), uid(2), uid(3)], 1)) == first
        assert await stored_count(client, addr, "B") == 3
        # Partial overlap: items 2 and 3 were stored; 4 is new and is the only one stored now.
        ids, queue, offset = answer(await send_batch(client, addr, "B", [uid(2), uid(3), uid(4)], 1))
        assert await stored_count(client, addr, "B") == 4
        old_ids = (first[0] or "").split(",")
        new_ids = (ids or "").split(",")
        assert new_ids[:2] == old_ids[1:]
        assert new_ids[2] not in old_ids
        assert (queue, offset) == ("0", "1")  # the first item's place: where uid(2) was stored
        # A single send of an id a batch stored answers that item.
        single = answer(await send_v2(client, addr, "B", b"x", props(**{UNIQ: uid(4)}), queue_id=0))
        assert single == (new_ids[2], "1", "0")


async def test_messages_without_an_id_are_not_deduplicated(tmp_path: Path) -> None:
    async with Broker(make_config(tmp_path, duplicateDetectionWindowSeconds="60")) as broker, RemotingClient() as client:
        addr = addr_of(broker)
        await create_topic(client, addr, "N")
        answer(await send_v2(client, addr, "N", b"a"))
        answer(await send_v2(client, addr, "N", b"a"))
        assert await stored_count(client, addr, "N") == 2


def test_the_window_forgets_by_time_and_by_count() -> None:
    window = DuplicateWindow(max_entries=80)
    for i in range(10):
        window.add("T", id_key(uid(i)), Stored(i * 100, 0, i), 10_000, now_ms=1_000 + i)
    assert window.find("T", id_key(uid(3)), 10_000, now_ms=2_000) == Stored(300, 0, 3)
    assert window.find("U", id_key(uid(3)), 10_000, now_ms=2_000) is None
    # Past the window: not found, and dropped once newer ids come.
    assert window.find("T", id_key(uid(3)), 10_000, now_ms=20_000) is None
    window.add("T", id_key(uid(99)), Stored(9_900, 1, 99), 10_000, now_ms=20_000)
    assert len(window) == 1
    # Bounded: never far above max_entries, the newest kept.
    for i in range(1_000):
        window.add("T", id_key(uid(i)), Stored(i, 0, i), 10_000, now_ms=21_000)
    assert len(window) <= 80 + 80 // 8 + 1
    assert window.find("T", id_key(uid(999)), 10_000, now_ms=21_000) == Stored(999, 0, 999)
    assert window.find("T", id_key(uid(0)), 10_000, now_ms=21_000) is None


def test_ids_that_are_not_32_hex_digits_keep_their_spelling() -> None:
    assert id_key(uid(1)) == int(uid(1), 16)
    assert id_key(uid(1).lower()) == uid(1).lower()  # never the same key as the upper-case id
    assert id_key("0X" + uid(1)[2:]) == "0X" + uid(1)[2:]
    assert merge_attributes((("a", "1"),), "") == (("a", "1"),)
    with pytest.raises(ValueError):
        merge_attributes((), "+nope=1")
    assert TopicConfig.from_json(TopicConfig("T", attributes=((DUPLICATE_WINDOW_ATTRIBUTE, "5"),)).to_json()) == (
        TopicConfig("T", attributes=((DUPLICATE_WINDOW_ATTRIBUTE, "5"),))
    )
    assert "attributes" not in TopicConfig("T").to_json()


def test_memory_per_id_is_small() -> None:
    """126 bytes per id measured over 1M ids (README); kept under 200 here."""
    n = 200_000
    window = DuplicateWindow(max_entries=2 * n)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(n):
            window.add("Topic", id_key(uid(i)), Stored(1 << 33 | i * 200, i % 8, 1 << 20 | i), 600_000, now_ms=1_000 + i // 1000)
        used = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(window) == n
    assert used / n < 200
