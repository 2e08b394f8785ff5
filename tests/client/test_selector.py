"""Ordered-send selectors put equal order ids on equal queues, as Java does."""

from __future__ import annotations

from orbitmq.client.queue import MessageQueue
from orbitmq.client.selector import hash_selector, machine_room_selector, random_selector

MQS = [MessageQueue("T", "a", i) for i in range(4)] + [MessageQueue("T", "b", i) for i in range(4)]


def test_hash_selector_uses_java_hash_codes() -> None:
    # Integer.hashCode is the value itself; String "order-1".hashCode() = -1207111310 in Java.
    assert hash_selector(MQS, None, 13) == MQS[13 % 8]
    assert hash_selector(MQS, None, -13) == MQS[13 % 8]
    assert hash_selector(MQS, None, "order-1") == MQS[abs(-1207111310) % 8]


def test_hash_selector_hashes_longs_like_java() -> None:
    # Long.hashCode(1L << 40) = (int)(v ^ (v >>> 32)) = 256 ^ 0 ... low word 0, high word 256.
    assert hash_selector(MQS, None, 1 << 40) == MQS[256 % 8]
    # Long.valueOf(-5000000000L).hashCode() = 705032702 (printed by a JVM).
    assert hash_selector(MQS, None, -5_000_000_000) == MQS[705032702 % 8]


def test_same_order_id_always_lands_on_the_same_queue() -> None:
    assert len({hash_selector(MQS, None, "key-42") for _ in range(50)}) == 1


def test_random_selector_spreads_over_all_queues() -> None:
    seen = {random_selector(MQS, None, None) for _ in range(500)}
    assert seen == set(MQS)


def test_machine_room_selector_stays_inside_the_listed_rooms() -> None:
    mqs = [MessageQueue("T", "east@a", i) for i in range(2)] + [MessageQueue("T", "west@b", i) for i in range(2)]
    select = machine_room_selector(["west"])
    assert {select(mqs, None, k).broker_name for k in range(20)} == {"west@b"}
