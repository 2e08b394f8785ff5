"""Hostile input at the broker's entry points (issue 10, item 11): illegal topic and
group names, JSON bodies of the wrong shape and out-of-range offsets are answered
with RocketMQ's code and a clear remark, and nothing of them is ever stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orbitmq.broker.handlers import fields as field_checks
from orbitmq.broker.server import Broker
from orbitmq.common import jsonbody
from orbitmq.errors import SystemError_
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import UNEXPECTED_ERROR_REMARK
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import FLAG_COMMIT, FLAG_SUBSCRIPTION, heartbeat_body, pull, request, send_v2
from tests.broker.test_messaging import create_topic

pytestmark = pytest.mark.timeout(60)

ILLEGAL_NAMES = ["../x", "a\0b", "/abs/dir", "a.b", "x" * 300]


def assert_clear_refusal(response: RemotingCommand, code: int = ResponseCode.SYSTEM_ERROR) -> str:
    """Refused with `code` and a remark of ours: never Python's exception text, never the catch-all."""
    remark = response.remark or ""
    assert response.code == code, (response.code, remark)
    assert remark and UNEXPECTED_ERROR_REMARK not in remark
    for python_text in ("has no attribute", "NoneType", "object is not", "Traceback", "invalid literal"):
        assert python_text not in remark, remark
    return remark


def saved_json(broker: Broker, name: str) -> Any:
    path = Path(broker.config.store.config_dir) / name
    return jsonbody.loads(path.read_text()) if path.exists() else {}


# --- JSON bodies of the wrong shape -----------------------------------------------------

JSON_BODY_CODES = [
    RequestCode.HEART_BEAT,
    RequestCode.CHECK_CLIENT_CONFIG,
    RequestCode.LOCK_BATCH_MQ,
    RequestCode.UNLOCK_BATCH_MQ,
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
]
WRONG_SHAPES = [b"null", b"[]", b"[1, 2]", b'"text"', b"42", b"true"]


@pytest.mark.parametrize("code", JSON_BODY_CODES)
async def test_a_json_body_that_is_not_an_object_is_refused_with_a_clear_remark(
    broker: Broker, client: RemotingClient, code: int
) -> None:
    for body in WRONG_SHAPES:
        response = await client.invoke(broker.broker_addr, RemotingCommand.request(code, {}, body), 10.0)
        remark = assert_clear_refusal(response)
        assert "JSON object" in remark, (body, remark)


@pytest.mark.parametrize(
    ("code", "body"),
    [
        (RequestCode.HEART_BEAT, {"clientID": "c", "consumerDataSet": 5}),
        (RequestCode.HEART_BEAT, {"clientID": "c", "consumerDataSet": [None]}),
        (RequestCode.HEART_BEAT, {"clientID": "c", "consumerDataSet": [{"groupName": "G", "subscriptionDataSet": "*"}]}),
        (RequestCode.HEART_BEAT, {"clientID": "c", "consumerDataSet": [{"groupName": "G", "subscriptionDataSet": [[]]}]}),
        (RequestCode.HEART_BEAT, {"clientID": "c", "producerDataSet": {"groupName": "P"}}),
        (RequestCode.HEART_BEAT, {"clientID": ["c"]}),
        (RequestCode.CHECK_CLIENT_CONFIG, {"subscriptionData": [1]}),
        (RequestCode.CHECK_CLIENT_CONFIG, {"subscriptionData": {"expressionType": {}}}),
        (RequestCode.LOCK_BATCH_MQ, {"consumerGroup": "G", "clientId": "c", "mqSet": 5}),
        (RequestCode.LOCK_BATCH_MQ, {"consumerGroup": "G", "clientId": "c", "mqSet": [None]}),
        (RequestCode.LOCK_BATCH_MQ, {"consumerGroup": "G", "clientId": "c", "mqSet": [{"topic": "T"}]}),
        (RequestCode.LOCK_BATCH_MQ, {"consumerGroup": "G", "clientId": "c",
                                     "mqSet": [{"topic": "T", "brokerName": "b", "queueId": -1}]}),
        (RequestCode.UNLOCK_BATCH_MQ, {"consumerGroup": {}, "clientId": "c", "mqSet": []}),
        (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {"groupName": ["G"]}),
        (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {"groupName": "G", "retryQueueNums": "abc"}),
        (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {"groupName": "G", "retryQueueNums": 10**9}),
        (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {"groupName": "G", "retryMaxTimes": 2**40}),
        (RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {"groupName": "G", "brokerId": [0]}),
        *((RequestCode.HEART_BEAT, {"clientID": "c", "consumerDataSet": [
            {"groupName": "G", "subscriptionDataSet": [{"topic": "T", **sub}]}]})
          for sub in ({"subVersion": "abc"}, {"codeSet": ["x"]}, {"codeSet": 5}, {"tagsSet": 5}, {"tagsSet": [{}]})),
    ],
)
async def test_json_fields_of_the_wrong_shape_are_refused_with_a_clear_remark(
    broker: Broker, client: RemotingClient, code: int, body: dict[str, Any]
) -> None:
    assert_clear_refusal(await request(client, broker.broker_addr, code, body=body))


# --- consumer offsets --------------------------------------------------------------------


async def test_update_consumer_offset_refuses_what_it_must_never_store(
    broker: Broker, client: RemotingClient
) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T", queues=4)
    good = {"consumerGroup": "CG", "topic": "T", "queueId": "1", "commitOffset": "5"}
    assert (await request(client, addr, RequestCode.UPDATE_CONSUMER_OFFSET, good)).code == ResponseCode.SUCCESS
    bad: list[dict[str, str]] = [
        {**good, "commitOffset": str(2**63)},
        {**good, "commitOffset": str(2**64 + 3)},
        {**good, "commitOffset": "-1"},
        {**good, "queueId": "-1"},
        {**good, "queueId": "4"},
        {**good, "queueId": "99"},
        *({**good, "topic": name} for name in ILLEGAL_NAMES),
        *({**good, "consumerGroup": name} for name in ILLEGAL_NAMES),
    ]
    for fields in bad:
        response = await request(client, addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields)
        assert_clear_refusal(response)
    unknown = await request(client, addr, RequestCode.UPDATE_CONSUMER_OFFSET, {**good, "topic": "NoSuchTopic"})
    assert_clear_refusal(unknown, ResponseCode.TOPIC_NOT_EXIST)

    def stored(table: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in table.items() if key.endswith("@CG")}

    assert stored(broker.offsets.to_json()["offsetTable"]) == {"T@CG": {1: 5}}
    await broker.close()
    saved = saved_json(broker, "consumerOffset.json")["offsetTable"]
    assert stored(saved) == {"T@CG": {1: 5}}
    assert not [key for key in saved if any(name in key for name in ILLEGAL_NAMES)]


async def test_a_pull_never_commits_an_offset_out_of_range(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T", queues=1)
    await pull(client, addr, "T", "CG", 0, sys_flag=FLAG_SUBSCRIPTION | FLAG_COMMIT, commit_offset=2**63)
    assert broker.offsets.query("CG", "T", 0) is None


# --- names at every entry point ------------------------------------------------------------


async def test_a_pull_does_not_auto_create_a_group_with_an_illegal_name(
    broker: Broker, client: RemotingClient
) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T", queues=1)
    for name in ILLEGAL_NAMES:
        remark = assert_clear_refusal(await pull(client, addr, "T", name, 0))
        assert "illegal characters" in remark or "longer than" in remark
        assert name not in broker.groups
    for name in ILLEGAL_NAMES:
        assert_clear_refusal(await pull(client, addr, name, "CG", 0))
    await broker.close()
    assert all(name not in saved_json(broker, "subscriptionGroup.json").get("subscriptionGroupTable", {})
               for name in ILLEGAL_NAMES)


async def test_a_heartbeat_with_an_illegal_name_changes_nothing(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    for group, topic in [("../g", "T"), ("G", "../x"), ("a\0b", "T")]:
        response = await request(client, addr, RequestCode.HEART_BEAT, body=heartbeat_body("c1", group, topic))
        assert_clear_refusal(response)
        assert group not in broker.groups and f"%RETRY%{group}" not in broker.topics
        assert broker.consumers.get(group) is None
    producer_only = {"clientID": "c1", "producerDataSet": [{"groupName": "../p"}]}
    assert_clear_refusal(await request(client, addr, RequestCode.HEART_BEAT, body=producer_only))


def _entry_points(bad: str) -> list[tuple[str, int, dict[str, str], Any]]:
    """(label, code, fields, body) of a request naming the illegal topic or group `bad`."""
    mq = {"topic": bad, "brokerName": "b", "queueId": 0}
    return [
        ("send v2 topic", RequestCode.SEND_MESSAGE_V2, {}, None),  # filled in by the test
        ("create topic", RequestCode.UPDATE_AND_CREATE_TOPIC,
         {"topic": bad, "readQueueNums": "1", "writeQueueNums": "1", "perm": "6"}, None),
        ("delete topic", RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": bad}, None),
        ("topic stats", RequestCode.GET_TOPIC_STATS_INFO, {"topic": bad}, None),
        ("create group", RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, {"groupName": bad}),
        ("delete group", RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": bad, "removeOffset": "true"}, None),
        ("query offset group", RequestCode.QUERY_CONSUMER_OFFSET,
         {"consumerGroup": bad, "topic": "T", "queueId": "0"}, None),
        ("query offset topic", RequestCode.QUERY_CONSUMER_OFFSET,
         {"consumerGroup": "CG", "topic": bad, "queueId": "0"}, None),
        ("max offset", RequestCode.GET_MAX_OFFSET, {"topic": bad, "queueId": "0"}, None),
        ("min offset", RequestCode.GET_MIN_OFFSET, {"topic": bad, "queueId": "0"}, None),
        ("search offset", RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {"topic": bad, "queueId": "0", "timestamp": "0"}, None),
        ("earliest time", RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": bad, "queueId": "0"}, None),
        ("query message", RequestCode.QUERY_MESSAGE,
         {"topic": bad, "key": "k", "maxNum": "1", "beginTimestamp": "0", "endTimestamp": "1"}, None),
        ("consume stats", RequestCode.GET_CONSUME_STATS, {"consumerGroup": bad}, None),
        ("consumed by", RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": bad}, None),
        ("time span", RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "T", "group": bad}, None),
        ("reset offset topic", RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
         {"topic": bad, "group": "CG", "timestamp": "0", "isForce": "true"}, None),
        ("reset offset group", RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
         {"topic": "T", "group": bad, "timestamp": "0", "isForce": "true"}, None),
        ("clone offsets source", RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": bad, "destGroup": "CG2"}, None),
        ("clone offsets dest", RequestCode.CLONE_GROUP_OFFSET, {"srcGroup": "CG", "destGroup": bad}, None),
        ("clone offsets topic", RequestCode.CLONE_GROUP_OFFSET,
         {"srcGroup": "CG", "destGroup": "CG2", "topic": bad}, None),
        ("consumer list", RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": bad}, None),
        ("consumer connections", RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": bad}, None),
        ("producer connections", RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": bad}, None),
        ("unregister", RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": bad}, None),
        ("send back", RequestCode.CONSUMER_SEND_MSG_BACK,
         {"group": bad, "offset": "0", "delayLevel": "0", "originMsgId": "x", "originTopic": "T"}, None),
        ("end transaction", RequestCode.END_TRANSACTION,
         {"producerGroup": bad, "tranStateTableOffset": "0", "commitLogOffset": "0", "commitOrRollback": "8"}, None),
        ("lock batch group", RequestCode.LOCK_BATCH_MQ, {}, {"consumerGroup": bad, "clientId": "c", "mqSet": []}),
        ("lock batch topic", RequestCode.LOCK_BATCH_MQ, {}, {"consumerGroup": "CG", "clientId": "c", "mqSet": [mq]}),
        ("unlock batch topic", RequestCode.UNLOCK_BATCH_MQ, {}, {"consumerGroup": "CG", "clientId": "c", "mqSet": [mq]}),
        ("reply topic", RequestCode.SEND_REPLY_MESSAGE,
         {"producerGroup": "PG", "topic": bad, "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
          "queueId": "0", "sysFlag": "0", "bornTimestamp": "0", "flag": "0", "properties": ""}, None),
    ]


@pytest.mark.parametrize("bad", ["../x", "../../victim", "/some/dir", "a\0b", "x" * 300, "a b"])
async def test_every_entry_point_refuses_an_illegal_topic_or_group_name(
    broker: Broker, client: RemotingClient, bad: str
) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T", queues=1)
    topics_before = set(broker.topics.names())
    for label, code, fields, body in _entry_points(bad):
        if code == RequestCode.SEND_MESSAGE_V2:
            response = await send_v2(client, addr, bad, b"x")
        else:
            response = await request(client, addr, code, fields, body=body)
        remark = assert_clear_refusal(response)
        assert "illegal characters" in remark or "longer than" in remark, (label, remark)
    assert set(broker.topics.names()) == topics_before
    assert bad not in broker.groups
    assert all(bad not in key for key in broker.offsets.to_json()["offsetTable"])


async def test_legal_names_with_every_allowed_character_still_work(broker: Broker, client: RemotingClient) -> None:
    addr = broker.broker_addr
    topic = "Aa0_-%|z"
    await create_topic(client, addr, topic, queues=1)
    assert (await send_v2(client, addr, topic, b"x")).code == ResponseCode.SUCCESS
    response = await pull(client, addr, topic, "G_-%|1", 0)
    assert response.code == ResponseCode.SUCCESS
    body = json.dumps(heartbeat_body("c1", "G_-%|1", topic)).encode()
    assert (await request(client, addr, RequestCode.HEART_BEAT, body=body)).code == ResponseCode.SUCCESS


def test_the_cache_of_legal_names_stays_bounded_and_never_holds_an_illegal_one() -> None:
    for i in range(field_checks._LEGAL_CACHE_MAX + 100):
        field_checks.legal_topic(f"T{i}")
    assert 0 < len(field_checks._LEGAL_TOPICS) <= field_checks._LEGAL_CACHE_MAX
    for name in ILLEGAL_NAMES:
        with pytest.raises(SystemError_):
            field_checks.legal_group(name)
        with pytest.raises(SystemError_):
            field_checks.legal_topic(name)
        assert name not in field_checks._LEGAL_GROUPS and name not in field_checks._LEGAL_TOPICS
