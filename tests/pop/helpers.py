"""Shared pieces of the POP tests: an in-process broker, topics, sends and raw POP requests."""

from __future__ import annotations

import time
from pathlib import Path

from orbitmq.broker.server import Broker
from orbitmq.client.pop import Popped, pop
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import props, request, send_v2
from tests.broker_features.inproc import addr_of, make_config

__all__ = ["Broker", "addr_of", "create_group", "make_config", "pop_all", "send", "start_broker"]


async def send(client: RemotingClient, addr: str, topic: str, body: bytes, queue_id: int = 0, tags: str = "") -> None:
    values = {"WAIT": "true", "UNIQ_KEY": f"UID{time.time_ns():X}"}
    if tags:
        values["TAGS"] = tags
    response = await send_v2(client, addr, topic, body, props(**values), queue_id=queue_id)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def create_group(client: RemotingClient, addr: str, group: str, retry_max_times: int = 16) -> None:
    body = {"groupName": group, "consumeEnable": True, "consumeFromMinEnable": True, "consumeBroadcastEnable": True,
            "retryQueueNums": 1, "retryMaxTimes": retry_max_times, "brokerId": 0, "whichBrokerWhenConsumeSlowly": 1}
    response = await request(client, addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, body)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def pop_all(
    client: RemotingClient, addr: str, broker_name: str, group: str, topic: str, want: int, timeout: float = 15.0,
    **options: object,
) -> Popped:
    """Pop (long polling) until `want` messages came or `timeout` passed; all of them in one `Popped`."""
    got = Popped("FOUND")
    deadline = time.monotonic() + timeout
    while len(got.messages) < want:
        left = deadline - time.monotonic()
        if left <= 0.2:
            break
        popped = await pop(client, addr, broker_name, group, topic, poll_ms=int(min(left, 3.0) * 1000),
                           **options)  # type: ignore[arg-type]
        got.messages.extend(popped.messages)
        got.header = popped.header or got.header
    return got


def start_broker(tmp_path: Path, **extra: str) -> Broker:
    return Broker(make_config(tmp_path, **extra))
