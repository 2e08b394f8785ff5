"""A group's retry policy (RocketMQ 5's groupRetryPolicy): JSON form, delays, refusals."""

from __future__ import annotations

import pytest

from orbitmq.common.retry_policy import (
    DEFAULT_NEXT_MS,
    CustomizedRetryPolicy,
    ExponentialRetryPolicy,
    GroupRetryPolicy,
)
from orbitmq.common.subscription_group import SubscriptionGroupConfig, alter_attributes


def test_delays_follow_rocketmq5() -> None:
    """Customized: index reconsumeTimes + 2, the last delay past the end; exponential: initial × multiplier^n, capped."""
    default = GroupRetryPolicy()
    assert len(DEFAULT_NEXT_MS) == 18 and DEFAULT_NEXT_MS[0] == 1000 and DEFAULT_NEXT_MS[-1] == 7_200_000
    assert [default.next_delay_ms(n) for n in (-1, 0, 1, 15, 16, 40)] == [10_000, 10_000, 30_000, 7_200_000,
                                                                        7_200_000, 7_200_000]
    exp = GroupRetryPolicy("EXPONENTIAL", exponential=ExponentialRetryPolicy(1000, 20_000, 3))
    assert [exp.next_delay_ms(n) for n in (0, 1, 2, 3, 100)] == [1000, 3000, 9000, 20_000, 20_000]
    # A type whose policy is absent falls back to the default customized policy, as RocketMQ 5's getRetryPolicy.
    assert GroupRetryPolicy("EXPONENTIAL").policy == CustomizedRetryPolicy()
    assert GroupRetryPolicy("CUSTOMIZED", exponential=ExponentialRetryPolicy()).policy == CustomizedRetryPolicy()


def test_json_round_trip_and_4x_bodies() -> None:
    body = {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, "5000"]}}
    policy = GroupRetryPolicy.from_json(body)
    assert policy.policy == CustomizedRetryPolicy((1000, 5000))
    assert policy.to_json() == {"customizedRetryPolicy": {"next": [1000, 5000]}, "type": "CUSTOMIZED"}
    group = SubscriptionGroupConfig.from_json({"groupName": "G", "retryMaxTimes": 2, "groupRetryPolicy": body})
    assert group.max_delivery_attempts == 3 and group.group_retry_policy == policy
    assert SubscriptionGroupConfig.from_json(group.to_json()) == group
    v4 = SubscriptionGroupConfig.from_json({"groupName": "Old", "retryMaxTimes": 16})
    assert v4.group_retry_policy == GroupRetryPolicy() and v4.max_delivery_attempts == 17
    assert v4.to_json()["groupRetryPolicy"] == {"type": "CUSTOMIZED"}  # what RocketMQ 5 writes for the default


@pytest.mark.parametrize("bad", [
    {"type": "LINEAR"},
    {"type": 3},
    [],
    {"customizedRetryPolicy": {"next": []}},
    {"customizedRetryPolicy": {"next": [1000, -1]}},
    {"customizedRetryPolicy": {"next": [1000, None]}},
    {"customizedRetryPolicy": {"next": "1000"}},
    {"customizedRetryPolicy": {"next": [10 ** 12]}},
    {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 5000, "max": 1000}},
    {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"multiplier": 0}},
    {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": "soon"}},
    {"type": "EXPONENTIAL", "exponentialRetryPolicy": 7},
])
def test_bad_policies_are_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        SubscriptionGroupConfig.from_json({"groupName": "G", "groupRetryPolicy": bad})


def test_attribute_changes_apply_to_the_current_attributes() -> None:
    current = (("a", "1"), ("b", "2"))
    assert alter_attributes(current, None) == current
    assert alter_attributes(current, {}) == current
    assert alter_attributes(current, {"+c": "3", "-a": ""}) == (("b", "2"), ("c", "3"))
    assert alter_attributes(current, {"z": "9"}) == (("z", "9"),)  # plain names: the whole map
    for bad in ({"+c": "3", "z": "9"}, {"+": "1"}, ["+a"]):
        with pytest.raises(ValueError):
            alter_attributes(current, bad)
