"""The broker's pure state: offsets, subscription groups, consumers, producers, locks, long polling."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from orbitmq.broker.consumers import ClientChannel, ConsumerRegistry, Subscription
from orbitmq.broker.locks import QueueKey, QueueLocks
from orbitmq.broker.longpoll import PullWaiters
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.producers import ProducerRegistry
from orbitmq.broker.subscriptions import SubscriptionGroupConfig, SubscriptionGroupTable
from orbitmq.common.javaprops import format_properties, parse_properties


@dataclass
class FakeChannel:
    id: int
    addr: str = "127.0.0.1:5000"


def client(channel_id: int, client_id: str, now: int = 0) -> ClientChannel:
    return ClientChannel(FakeChannel(channel_id), client_id, "JAVA", 407, now)


def register(reg: ConsumerRegistry, group: str, c: ClientChannel, topics: tuple[str, ...] = ("T",)) -> bool:
    return reg.register(
        group,
        c,
        consume_type="CONSUME_PASSIVELY",
        message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_LAST_OFFSET",
        subscriptions=[Subscription(t) for t in topics],
    )


def test_properties_text_reads_comments_separators_and_continuations() -> None:
    text = "# comment\n! other\nbrokerName = broker-b\nlistenPort:10920\nnamesrvAddr a:1;\\\n    b:2\nflag true\n"
    assert parse_properties(text) == {
        "brokerName": "broker-b",
        "listenPort": "10920",
        "namesrvAddr": "a:1;b:2",
        "flag": "true",
    }


def test_properties_text_round_trips_through_format() -> None:
    props = {"b": "2", "a": "x y", "c": "true"}
    assert parse_properties(format_properties(props)) == props


def test_consumer_offsets_serialize_with_topic_at_group_keys_and_load_back() -> None:
    table = ConsumerOffsetTable()
    table.commit("CG", "T", 0, 12)
    table.commit("CG", "T", 1, 7)
    assert table.dirty
    obj = table.to_json()
    assert obj == {"offsetTable": {"T@CG": {0: 12, 1: 7}}}
    again = ConsumerOffsetTable()
    again.load_json({"offsetTable": {"T@CG": {"0": 12, "1": "7"}, "broken": {0: 1}}})
    assert again.query("CG", "T", 1) == 7
    assert again.query("CG", "T", 2) is None
    assert not again.dirty


def test_committing_the_same_offset_twice_does_not_mark_the_table_dirty() -> None:
    table = ConsumerOffsetTable()
    table.commit("CG", "T", 0, 5)
    table.mark_clean()
    table.commit("CG", "T", 0, 5)
    assert not table.dirty


def test_subscription_groups_are_auto_created_only_when_enabled() -> None:
    on = SubscriptionGroupTable(auto_create=True, clock_ms=lambda: 1000)
    assert on.find_or_create("G") == SubscriptionGroupConfig("G")
    assert on.data_version.counter == 1
    off = SubscriptionGroupTable(auto_create=False)
    assert off.find_or_create("G") is None


def test_subscription_group_json_round_trips_with_defaults_for_missing_fields() -> None:
    table = SubscriptionGroupTable(auto_create=False, clock_ms=lambda: 5)
    table.put(SubscriptionGroupConfig("G", retry_max_times=3))
    copy = SubscriptionGroupTable(auto_create=False)
    copy.load_json(table.to_json())
    assert copy.get("G") == SubscriptionGroupConfig("G", retry_max_times=3)
    assert SubscriptionGroupConfig.from_json({"groupName": "X"}) == SubscriptionGroupConfig("X")


def test_a_new_consumer_connection_changes_membership_but_a_repeat_heartbeat_does_not() -> None:
    reg = ConsumerRegistry()
    assert register(reg, "G", client(1, "c1"))
    assert not register(reg, "G", client(1, "c1", now=5))
    assert register(reg, "G", client(2, "c2"))
    assert sorted(reg.get("G").client_ids()) == ["c1", "c2"]  # type: ignore[union-attr]


def test_a_closed_connection_leaves_every_group_at_once() -> None:
    reg = ConsumerRegistry()
    register(reg, "G1", client(1, "c1"))
    register(reg, "G2", client(1, "c1"))
    register(reg, "G2", client(2, "c2"))
    assert sorted(reg.channel_closed(1)) == ["G1", "G2"]
    assert reg.get("G1") is None
    assert reg.get("G2").client_ids() == ["c2"]  # type: ignore[union-attr]


def test_consumer_connections_expire_after_the_timeout_without_heartbeat() -> None:
    reg = ConsumerRegistry(channel_expired_ms=120_000)
    register(reg, "G", client(1, "old", now=0))
    register(reg, "G", client(2, "new", now=100_000))
    assert reg.scan_expired(119_000) == []
    dropped = reg.scan_expired(121_000)
    assert [(g, c.client_id) for g, c in dropped] == [("G", "old")]
    assert reg.get("G").client_ids() == ["new"]  # type: ignore[union-attr]


def test_subscription_tag_codes_are_compared_as_signed_32_bit_values() -> None:
    sub = Subscription.from_json({"topic": "T", "subString": "A", "codeSet": [0xFFFFFFFF], "tagsSet": ["A"]})
    assert sub.code_set == frozenset({-1})
    assert not sub.matches_all
    assert Subscription.from_json({"topic": "T", "subString": "*"}).matches_all


def test_producers_are_kept_by_group_and_dropped_when_their_connection_closes() -> None:
    reg = ProducerRegistry()
    reg.register("PG", client(1, "p1"))
    reg.register("PG", client(2, "p2"))
    reg.channel_closed(1)
    assert [c.client_id for c in reg.channels("PG")] == ["p2"]
    assert reg.connection_json("PG")["connectionSet"][0]["clientId"] == "p2"
    assert reg.find_by_client_id("p2") is not None


MQ0 = QueueKey("T", "broker-a", 0)
MQ1 = QueueKey("T", "broker-a", 1)


def test_a_queue_lock_held_by_one_client_is_not_granted_to_another() -> None:
    locks = QueueLocks(max_live_ms=60_000)
    assert locks.try_lock_batch("G", [MQ0, MQ1], "c1", now_ms=0) == {MQ0, MQ1}
    assert locks.try_lock_batch("G", [MQ0, MQ1], "c2", now_ms=1_000) == set()
    assert locks.try_lock_batch("G", [MQ0], "c1", now_ms=2_000) == {MQ0}
    assert locks.owner("G", MQ0, now_ms=2_000) == "c1"


def test_a_queue_lock_expires_after_sixty_seconds_without_renewal() -> None:
    locks = QueueLocks(max_live_ms=60_000)
    locks.try_lock_batch("G", [MQ0], "c1", now_ms=0)
    assert locks.try_lock_batch("G", [MQ0], "c2", now_ms=60_000) == set()
    assert locks.try_lock_batch("G", [MQ0], "c2", now_ms=60_001) == {MQ0}
    assert not locks.is_locked("G", MQ0, "c1", now_ms=60_001)


def test_a_lock_of_a_client_that_is_gone_is_granted_to_another() -> None:
    locks = QueueLocks()
    locks.try_lock_batch("G", [MQ0], "c1", now_ms=0)
    assert locks.try_lock_batch("G", [MQ0], "c2", now_ms=1, is_alive=lambda cid: cid != "c1") == {MQ0}


def test_unlocking_releases_only_the_callers_own_locks() -> None:
    locks = QueueLocks()
    locks.try_lock_batch("G", [MQ0], "c1", now_ms=0)
    locks.unlock_batch("G", [MQ0], "c2")
    assert locks.owner("G", MQ0, now_ms=1) == "c1"
    locks.unlock_batch("G", [MQ0], "c1")
    assert locks.owner("G", MQ0, now_ms=1) is None


async def test_a_waiting_pull_is_woken_by_a_dispatch_past_its_offset() -> None:
    waiters = PullWaiters()
    task = asyncio.create_task(waiters.wait("T", 0, 5, timeout_s=30))
    await asyncio.sleep(0)
    waiters.notify("T", 0, 5)  # not past offset 5 yet
    waiters.notify("T", 1, 9)  # another queue
    await asyncio.sleep(0)
    assert not task.done()
    waiters.notify("T", 0, 6)
    assert await asyncio.wait_for(task, 1) is True
    assert len(waiters) == 0


async def test_a_waiting_pull_returns_false_when_its_time_runs_out() -> None:
    waiters = PullWaiters()
    assert await waiters.wait("T", 0, 0, timeout_s=0.01) is False
    assert len(waiters) == 0


async def test_after_shutdown_began_pulls_no_longer_wait() -> None:
    waiters = PullWaiters()
    task = asyncio.create_task(waiters.wait("T", 0, 0, timeout_s=30))
    await asyncio.sleep(0)
    waiters.wake_all()
    assert await asyncio.wait_for(task, 1) is True
    assert await asyncio.wait_for(waiters.wait("T", 0, 0, timeout_s=30), 1) is False
