"""Queue allocation strategies for clustering consumers (RocketMQ's AllocateMessageQueueStrategy).

Every member of a consumer group runs the same strategy over the same sorted
queue list and the same sorted client-id list, and takes its own share. The
results must match the Java client's bit for bit, or a Python member and a
Java member of one group would both take (or both skip) some queue.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Collection, Sequence
from typing import Protocol

from orbitmq.client.queue import MessageQueue
from orbitmq.errors import ClientError


class QueueAllocator(Protocol):
    """Picks the queues `current_cid` consumes; `mq_all` and `cid_all` arrive sorted."""

    name: str

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]: ...


def _check(current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]) -> bool:
    """Java's argument checks; False means "this client gets nothing"."""
    if not current_cid:
        raise ClientError("currentCID is empty")
    if not mq_all:
        raise ClientError("mqAll is null or mqAll empty")
    if not cid_all:
        raise ClientError("cidAll is null or cidAll empty")
    return current_cid in cid_all


class Averagely:
    """Contiguous blocks; the first `n % m` clients take one queue more (§6.5)."""

    name = "AVG"

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        n, m = len(mq_all), len(cid_all)
        index = list(cid_all).index(current_cid)
        mod = n % m
        if n <= m:
            size = 1
        elif mod > 0 and index < mod:
            size = n // m + 1
        else:
            size = n // m
        start = index * size if (mod > 0 and index < mod) else index * size + mod
        count = min(size, n - start)
        return [mq_all[(start + i) % n] for i in range(max(count, 0))]


class AveragelyByCircle:
    """Round-robin: client i takes queues i, i+m, i+2m, ..."""

    name = "AVG_BY_CIRCLE"

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        m = len(cid_all)
        index = list(cid_all).index(current_cid)
        return [mq for i, mq in enumerate(mq_all) if i >= index and i % m == index]


def _md5_hash(key: str) -> int:
    """Java's MD5Hash: the first four digest bytes as an unsigned big-endian number."""
    return int.from_bytes(hashlib.md5(key.encode("utf-8")).digest()[:4], "big")


class ConsistentHash:
    """A hash ring of `virtual_nodes` points per client (MD5, like the Java default).

    A queue goes to the first ring point at or after its hash, wrapping around.
    Clients are placed in the order given; a later client whose point collides
    with an earlier one replaces it, as Java's TreeMap.put does.
    """

    name = "CONSISTENT_HASH"

    def __init__(self, virtual_nodes: int = 10) -> None:
        if virtual_nodes < 0:
            raise ClientError(f"illegal virtualNodeCnt: {virtual_nodes}")
        self.virtual_nodes = virtual_nodes

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        ring: dict[int, str] = {}
        for cid in cid_all:
            for i in range(self.virtual_nodes):
                ring[_md5_hash(f"{cid}-{i}")] = cid
        points = sorted(ring)
        if not points:
            return []
        result = []
        for mq in mq_all:
            at = bisect.bisect_left(points, _md5_hash(mq.java_str()))
            owner = ring[points[at % len(points)]]
            if owner == current_cid:
                result.append(mq)
        return result


class ByConfig:
    """A fixed list of queues, whatever the group looks like."""

    name = "CONFIG"

    def __init__(self, queues: Sequence[MessageQueue]) -> None:
        self.queues = list(queues)

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        return list(self.queues)


class ByMachineRoom:
    """Queues of brokers named `<room>@<name>` in the given rooms, split in blocks.

    Client i takes `len // m` queues from position `i * (len // m)`, plus queue
    `i + m * (len // m)` when `i` is below the remainder (Java's rule).
    """

    name = "MACHINE_ROOM"

    def __init__(self, consumer_idcs: Collection[str]) -> None:
        self.consumer_idcs = set(consumer_idcs)

    def allocate(
        self, group: str, current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
    ) -> list[MessageQueue]:
        if not _check(current_cid, mq_all, cid_all):
            return []
        index = list(cid_all).index(current_cid)
        pre = [mq for mq in mq_all if mq.broker_name.split("@")[0] in self.consumer_idcs]
        m = len(cid_all)
        per, rem = divmod(len(pre), m)
        result = pre[per * index : per * index + per]
        if rem > index:
            result.append(pre[index + per * m])
        return result


def allocator_by_name(name: str) -> QueueAllocator:
    """A strategy without parameters by its RocketMQ short name (AVG, AVG_BY_CIRCLE, CONSISTENT_HASH)."""
    table: dict[str, QueueAllocator] = {
        "AVG": Averagely(),
        "AVG_BY_CIRCLE": AveragelyByCircle(),
        "CONSISTENT_HASH": ConsistentHash(),
    }
    try:
        return table[name]
    except KeyError:
        raise ClientError(f"unknown allocation strategy {name!r}; known: {sorted(table)}") from None
