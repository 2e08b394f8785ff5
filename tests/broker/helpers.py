"""Raw remoting requests the broker tests send (no OrbitMQ client involved)."""

from __future__ import annotations

import time
from typing import Any

from orbitmq.common import jsonbody
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.common.record import iter_records
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.sysflag import PullSysFlag
from orbitmq.remoting.transport import RemotingClient

FLAG_COMMIT = PullSysFlag.COMMIT_OFFSET
FLAG_SUSPEND = PullSysFlag.SUSPEND
FLAG_SUBSCRIPTION = PullSysFlag.SUBSCRIPTION


def props(**values: str) -> str:
    return mc.encode_properties(values)


async def send_v1(
    client: RemotingClient, addr: str, topic: str, body: bytes, properties: str = "", queue_id: int = 0, **extra: str
) -> RemotingCommand:
    fields = {
        "producerGroup": "PG",
        "topic": topic,
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": str(queue_id),
        "sysFlag": "0",
        "bornTimestamp": str(int(time.time() * 1000)),
        "flag": "0",
        "properties": properties,
        "reconsumeTimes": "0",
        "unitMode": "false",
        "batch": "false",
    }
    fields.update(extra)
    return await client.invoke(addr, RemotingCommand.request(RequestCode.SEND_MESSAGE, fields, body), 10.0)


async def send_v2(
    client: RemotingClient, addr: str, topic: str, body: bytes, properties: str = "", queue_id: int = 0,
    code: int = RequestCode.SEND_MESSAGE_V2, timeout: float = 10.0, **extra: str,
) -> RemotingCommand:
    fields = {
        "a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": "0",
        "g": str(int(time.time() * 1000)), "h": "7", "i": properties, "j": "0", "k": "false",
        "m": "true" if code == RequestCode.SEND_BATCH_MESSAGE else "false",
    }
    fields.update(extra)
    return await client.invoke(addr, RemotingCommand.request(code, fields, body), timeout)


async def pull(
    client: RemotingClient, addr: str, topic: str, group: str, offset: int, *, queue_id: int = 0,
    max_nums: int = 32, sys_flag: int = FLAG_SUBSCRIPTION, subscription: str = "*",
    suspend_ms: int = 0, commit_offset: int = 0, timeout: float = 10.0, expression_type: str = "TAG",
) -> RemotingCommand:
    fields = {
        "consumerGroup": group, "topic": topic, "queueId": str(queue_id), "queueOffset": str(offset),
        "maxMsgNums": str(max_nums), "sysFlag": str(sys_flag), "commitOffset": str(commit_offset),
        "suspendTimeoutMillis": str(suspend_ms), "subscription": subscription, "subVersion": "0",
        "expressionType": expression_type,
    }
    return await client.invoke(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, fields), timeout)


def records(response: RemotingCommand) -> list[MessageExt]:
    return list(iter_records(response.body_bytes()))


async def request(
    client: RemotingClient, addr: str, code: int, fields: dict[str, str] | None = None, body: Any = None,
    timeout: float = 10.0,
) -> RemotingCommand:
    if body is not None and not isinstance(body, (bytes, bytearray)):
        body = jsonbody.dumps(body)
    return await client.invoke(addr, RemotingCommand.request(code, fields, body), timeout)


def heartbeat_body(client_id: str, group: str, topic: str, sub: str = "*", codes: list[int] | None = None) -> dict[str, Any]:
    tags = [] if sub == "*" else [t.strip() for t in sub.split("||")]
    return {
        "clientID": client_id,
        "producerDataSet": [{"groupName": "CLIENT_INNER_PRODUCER"}],
        "consumerDataSet": [
            {
                "groupName": group,
                "consumeType": "CONSUME_PASSIVELY",
                "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                "unitMode": False,
                "subscriptionDataSet": [
                    {
                        "topic": topic, "subString": sub, "tagsSet": tags, "codeSet": codes or [],
                        "subVersion": 1, "expressionType": "TAG", "classFilterMode": False,
                    }
                ],
            }
        ],
    }


async def create_topic(client: RemotingClient, addr: str, topic: str, queues: int = 4, perm: int = 6) -> None:
    """UPDATE_AND_CREATE_TOPIC with `queues` read and write queues; fails the test unless it succeeds."""
    fields = {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": str(queues), "writeQueueNums": str(queues),
        "perm": str(perm), "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
    }
    response = await request(client, addr, RequestCode.UPDATE_AND_CREATE_TOPIC, fields)
    assert response.code == ResponseCode.SUCCESS, response.remark
