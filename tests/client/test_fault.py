"""Broker fault avoidance follows RocketMQ's latency and back-off tables."""

from __future__ import annotations

import pytest

from orbitmq.client.fault import (
    FaultStrategy,
    LatencyFaultTolerance,
    QueueRoundRobin,
    not_available_duration,
)
from orbitmq.client.queue import MessageQueue


@pytest.mark.parametrize(
    ("latency", "duration"),
    [(0, 0), (49, 0), (50, 0), (100, 0), (549, 0), (550, 30000), (999, 30000), (1000, 60000),
     (2000, 120000), (3000, 180000), (14999, 180000), (15000, 600000), (30000, 600000)],
)
def test_latency_maps_to_the_rocketmq_not_available_duration(latency: int, duration: int) -> None:
    assert not_available_duration(latency) == duration


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def two_brokers() -> list[MessageQueue]:
    return [MessageQueue("T", b, i) for b in ("a", "b") for i in range(2)]


def test_a_failed_broker_is_avoided_until_its_back_off_ends() -> None:
    clock = Clock()
    strategy = FaultStrategy(enabled=True, tolerance=LatencyFaultTolerance(clock_ms=clock))
    strategy.record("a", 10, isolation=True)  # a failure costs 600 s of avoidance
    counter = QueueRoundRobin(0)
    picks = {strategy.select(two_brokers(), counter, None).broker_name for _ in range(20)}
    assert picks == {"b"}
    clock.now += 600_000
    picks = {strategy.select(two_brokers(), counter, None).broker_name for _ in range(20)}
    assert picks == {"a", "b"}


def test_a_fast_answer_does_not_cause_avoidance() -> None:
    strategy = FaultStrategy(enabled=True)
    strategy.record("a", 40, isolation=False)
    assert strategy.tolerance.is_available("a")


def test_when_every_broker_is_avoided_the_least_bad_one_is_used() -> None:
    clock = Clock()
    strategy = FaultStrategy(enabled=True, tolerance=LatencyFaultTolerance(clock_ms=clock))
    strategy.record("a", 20000, isolation=False)
    strategy.record("b", 600, isolation=False)
    mq = strategy.select(two_brokers(), QueueRoundRobin(0), None)
    assert mq.broker_name in {"a", "b"}
    assert strategy.tolerance.pick_one_at_least() == "b" or len(strategy.tolerance.items) == 2


def test_without_fault_avoidance_a_retry_skips_the_broker_that_just_failed() -> None:
    strategy = FaultStrategy(enabled=False)
    counter = QueueRoundRobin(0)
    for _ in range(10):
        assert strategy.select(two_brokers(), counter, "a").broker_name == "b"


def test_round_robin_visits_every_queue_in_turn() -> None:
    strategy = FaultStrategy(enabled=False)
    counter = QueueRoundRobin(0)
    mqs = two_brokers()
    picks = [strategy.select(mqs, counter, None) for _ in range(8)]
    assert picks[:4] != picks[4:] or sorted(picks[:4]) == sorted(mqs)
    assert sorted(picks[:4]) == sorted(mqs)


def test_a_broker_that_left_the_route_is_forgotten_by_the_fault_table() -> None:
    clock = Clock()
    strategy = FaultStrategy(enabled=True, tolerance=LatencyFaultTolerance(clock_ms=clock))
    strategy.record("gone", 20000, isolation=False)
    only_b = [MessageQueue("T", "b", 0)]
    strategy.record("b", 20000, isolation=False)
    strategy.select(only_b, QueueRoundRobin(0), None)
    for _ in range(4):
        assert strategy.select(only_b, QueueRoundRobin(0), None).broker_name == "b"
