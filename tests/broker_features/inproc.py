"""An in-process broker on 127.0.0.1:0 with a temp store, for the feature tests that drive raw requests."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.common.message import MessageExt
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker import helpers
from tests.broker.helpers import FLAG_SUBSCRIPTION, FLAG_SUSPEND, pull, records
from tests.support.dev import broker_config

#: A short delay table so level tests wait seconds, not minutes.
SHORT_LEVELS = "1s 2s 3s"


def make_config(tmp_path: Path, **extra: str) -> BrokerConfig:
    return broker_config(tmp_path, **{
        "mappedFileSizeCommitLog": str(1 << 22), "mappedFileSizeConsumeQueue": str(20 * 3000),
        "messageDelayLevel": SHORT_LEVELS, "flushDelayOffsetInterval": "200", **extra,
    })


def addr_of(broker: Broker) -> str:
    assert broker.address is not None
    return f"127.0.0.1:{broker.address[1]}"


async def create_topic(client: RemotingClient, addr: str, topic: str, queues: int = 1) -> None:
    """A topic of one queue unless told otherwise (the feature tests read queue 0)."""
    await helpers.create_topic(client, addr, topic, queues)


async def drain(
    client: RemotingClient, addr: str, topic: str, group: str, want: int, timeout: float, *,
    queue_id: int = 0, subscription: str = "*", expression_type: str = "TAG",
) -> list[tuple[float, MessageExt]]:
    """Long-poll one queue until `want` messages came (or `timeout` passed); (arrival time, message) pairs."""
    got: list[tuple[float, MessageExt]] = []
    offset = 0
    deadline = time.monotonic() + timeout
    while len(got) < want:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        suspend = int(min(left, 2.0) * 1000)
        response = await pull(
            client, addr, topic, group, offset, queue_id=queue_id, max_nums=64,
            sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND, subscription=subscription, suspend_ms=suspend,
            timeout=suspend / 1000 + 5, expression_type=expression_type,
        )
        now = time.time()
        if response.code == ResponseCode.SUCCESS:
            got.extend((now, m) for m in records(response))
        elif response.code not in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
            raise AssertionError(f"pull answered {response.code}: {response.remark}")
        offset = int(response.ext_fields["nextBeginOffset"])
        if response.code == ResponseCode.PULL_RETRY_IMMEDIATELY:
            await asyncio.sleep(0.01)
    return got
