"""Queue allocation must match the Java client so both can share one consumer group."""

from __future__ import annotations

import pytest

from orbitmq.client.allocate import (
    Averagely,
    AveragelyByCircle,
    ByConfig,
    ByMachineRoom,
    ConsistentHash,
    allocator_by_name,
)
from orbitmq.client.queue import MessageQueue
from orbitmq.errors import ClientError


def queues(n: int, broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue("T", broker, i) for i in range(n)]


def cids(m: int) -> list[str]:
    return [f"10.0.0.{i}@c" for i in range(m)]


def ids(mqs: list[MessageQueue]) -> list[int]:
    return [mq.queue_id for mq in mqs]


@pytest.mark.parametrize(
    ("n", "m", "expected"),
    [
        # Worked through with the Java rule of AllocateMessageQueueAveragely.
        (8, 3, [[0, 1, 2], [3, 4, 5], [6, 7]]),
        (10, 4, [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]),
        (4, 4, [[0], [1], [2], [3]]),
        (3, 5, [[0], [1], [2], [], []]),
        (16, 3, [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10], [11, 12, 13, 14, 15]]),
        (1, 2, [[0], []]),
    ],
)
def test_averagely_gives_contiguous_blocks_with_the_remainder_to_the_first_clients(
    n: int, m: int, expected: list[list[int]]
) -> None:
    strategy = Averagely()
    got = [ids(strategy.allocate("G", cid, queues(n), cids(m))) for cid in cids(m)]
    assert got == expected


@pytest.mark.parametrize(("n", "m"), [(8, 3), (5, 5), (3, 7), (16, 4)])
def test_averagely_by_circle_deals_queues_round_robin(n: int, m: int) -> None:
    strategy = AveragelyByCircle()
    for index, cid in enumerate(cids(m)):
        assert ids(strategy.allocate("G", cid, queues(n), cids(m))) == list(range(index, n, m))


@pytest.mark.parametrize("strategy", [Averagely(), AveragelyByCircle(), ConsistentHash()])
@pytest.mark.parametrize(("n", "m"), [(1, 1), (7, 3), (16, 5), (4, 9), (32, 32)])
def test_every_queue_goes_to_exactly_one_client(strategy, n: int, m: int) -> None:  # type: ignore[no-untyped-def]
    mq_all = sorted(queues(n // 2, "broker-a") + queues(n - n // 2, "broker-b"))
    taken: list[MessageQueue] = []
    for cid in cids(m):
        taken.extend(strategy.allocate("G", cid, mq_all, cids(m)))
    assert sorted(taken) == mq_all


def test_a_client_missing_from_the_group_list_gets_nothing() -> None:
    assert Averagely().allocate("G", "stranger", queues(4), cids(2)) == []


def test_allocation_rejects_an_empty_queue_or_client_list() -> None:
    with pytest.raises(ClientError):
        Averagely().allocate("G", "a", [], ["a"])
    with pytest.raises(ClientError):
        Averagely().allocate("G", "a", queues(2), [])
    with pytest.raises(ClientError):
        Averagely().allocate("G", "", queues(2), ["a"])


def test_consistent_hash_moves_few_queues_when_a_client_joins() -> None:
    mq_all = queues(64)
    strategy = ConsistentHash()
    before = {mq: cid for cid in cids(4) for mq in strategy.allocate("G", cid, mq_all, cids(4))}
    after = {mq: cid for cid in cids(5) for mq in strategy.allocate("G", cid, mq_all, cids(5))}
    moved = [mq for mq in mq_all if before[mq] != after[mq]]
    # Only queues taken over by the newcomer change owner.
    assert all(after[mq] == cids(5)[4] for mq in moved)


def test_consistent_hash_uses_the_java_md5_ring_hash() -> None:
    from orbitmq.client.allocate import _md5_hash

    # Java's MD5Hash of "10.0.0.1@c-3" (virtual node 3 of a client), printed by a JVM.
    assert _md5_hash("10.0.0.1@c-3") == 1797936973


def test_consistent_hash_keys_queues_by_the_java_message_queue_string() -> None:
    mq = MessageQueue("T", "broker-a", 3)
    assert mq.java_str() == "MessageQueue [topic=T, brokerName=broker-a, queueId=3]"


def test_by_config_returns_the_configured_queues() -> None:
    chosen = [MessageQueue("T", "b", 7)]
    assert ByConfig(chosen).allocate("G", "x", queues(2), ["x", "y"]) == chosen


def test_by_machine_room_splits_only_the_queues_of_listed_rooms() -> None:
    mq_all = sorted(queues(3, "room1@broker-a") + queues(3, "room2@broker-b") + queues(2, "room3@broker-c"))
    strategy = ByMachineRoom(["room1", "room3"])
    # 5 eligible queues, 2 clients: 2 each, the remainder (1) to client 0.
    first = strategy.allocate("G", cids(2)[0], mq_all, cids(2))
    second = strategy.allocate("G", cids(2)[1], mq_all, cids(2))
    eligible = [mq for mq in mq_all if not mq.broker_name.startswith("room2")]
    assert first == [eligible[0], eligible[1], eligible[4]]
    assert second == [eligible[2], eligible[3]]


def test_strategies_are_found_by_their_rocketmq_short_names() -> None:
    assert isinstance(allocator_by_name("AVG"), Averagely)
    assert isinstance(allocator_by_name("AVG_BY_CIRCLE"), AveragelyByCircle)
    with pytest.raises(ClientError):
        allocator_by_name("NOPE")


def test_queues_sort_by_topic_then_broker_then_queue_id() -> None:
    mqs = [MessageQueue("B", "a", 0), MessageQueue("A", "b", 0), MessageQueue("A", "a", 10), MessageQueue("A", "a", 2)]
    assert sorted(mqs) == [
        MessageQueue("A", "a", 2),
        MessageQueue("A", "a", 10),
        MessageQueue("A", "b", 0),
        MessageQueue("B", "a", 0),
    ]
