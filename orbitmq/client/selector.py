"""Message queue selectors for ordered sends (RocketMQ's MessageQueueSelector).

A selector maps (queues, message, arg) to one queue. Messages with the same
`arg` (an order id) go to the same queue as long as the queue list is the
same, which is what keeps per-key order.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from orbitmq.client.queue import MessageQueue
from orbitmq.common.hashing import java_string_hash
from orbitmq.errors import ClientError


class QueueSelector(Protocol):
    def __call__(self, queues: Sequence[MessageQueue], message: Any, arg: Any) -> MessageQueue: ...


def _java_hash(arg: Any) -> int:
    """The `hashCode()` Java would compute for common argument types."""
    if isinstance(arg, bool):
        return 1231 if arg else 1237
    if isinstance(arg, int):
        if -(1 << 31) <= arg < (1 << 31):
            return arg  # Integer.hashCode
        v = arg & 0xFFFFFFFFFFFFFFFF  # Long.hashCode: (int)(v ^ (v >>> 32))
        h = (v ^ (v >> 32)) & 0xFFFFFFFF
        return h - (1 << 32) if h & 0x80000000 else h
    if isinstance(arg, str):
        return java_string_hash(arg)
    if isinstance(arg, bytes):
        return java_string_hash(arg.decode("utf-8", "surrogateescape"))
    raise ClientError(f"hash selector needs an int or str argument, got {type(arg).__name__}")


def hash_selector(queues: Sequence[MessageQueue], message: Any, arg: Any) -> MessageQueue:
    """`abs(arg.hashCode()) % len(queues)`, the Java SelectMessageQueueByHash rule.

    Integers and strings hash as Java hashes them, so a Python producer and a
    Java producer put the same order id on the same queue.
    """
    if not queues:
        raise ClientError("no queue to select from")
    return queues[abs(_java_hash(arg)) % len(queues)]


def random_selector(queues: Sequence[MessageQueue], message: Any, arg: Any) -> MessageQueue:
    """Any queue, uniformly (SelectMessageQueueByRandom)."""
    if not queues:
        raise ClientError("no queue to select from")
    return queues[random.randrange(len(queues))]


def machine_room_selector(consumer_idcs: Sequence[str]) -> Callable[[Sequence[MessageQueue], Any, Any], MessageQueue]:
    """Hash over the queues of brokers named `<room>@<name>` in `consumer_idcs`.

    RocketMQ ships SelectMessageQueueByMachineRoom without a body; this one keeps
    the same idea (stay in the listed machine rooms) and falls back to all
    queues when no broker carries a listed room.
    """
    rooms = set(consumer_idcs)

    def select(queues: Sequence[MessageQueue], message: Any, arg: Any) -> MessageQueue:
        local = [mq for mq in queues if mq.broker_name.split("@")[0] in rooms]
        return hash_selector(local or queues, message, arg)

    return select
