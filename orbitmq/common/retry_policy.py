"""A consumer group's retry policy (RocketMQ 5's SubscriptionGroupConfig `groupRetryPolicy`).

JSON form, as RocketMQ 5 writes it (fastjson leaves out the policy that is not set)::

    {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": [1000, 5000, 10000]}}
    {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 5000, "max": 7200000, "multiplier": 2}}

All durations are milliseconds. A type whose policy is absent uses the default customized policy
(the 18 delays 1 s … 2 h of the old delay levels 3–18 and beyond), as RocketMQ 5 does. The gRPC front
hands the policy to RocketMQ 5 clients as their Settings' backoff (a PushConsumer waits that long
before a failed message comes back) and uses it where RocketMQ 5's proxy does: a message whose
automatic renewal has run for its maximum time is made visible again after the policy's delay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orbitmq.common.jsonfields import JsonFieldError, get_int, get_str, json_object

CUSTOMIZED = "CUSTOMIZED"
EXPONENTIAL = "EXPONENTIAL"
TYPES = (EXPONENTIAL, CUSTOMIZED)

#: RocketMQ 5's default customized delays (ms): 1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h.
DEFAULT_NEXT_MS: tuple[int, ...] = tuple(s * 1000 for s in (
    1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200))
#: A delay longer than this (a day) is refused: it could not be an invisible time either.
MAX_DELAY_MS = 24 * 3600_000


@dataclass(frozen=True, slots=True)
class CustomizedRetryPolicy:
    next_ms: tuple[int, ...] = DEFAULT_NEXT_MS

    def next_delay_ms(self, reconsume_times: int) -> int:
        """RocketMQ 5's CustomizedRetryPolicy: index reconsumeTimes + 2 (the old delay levels start at 3),
        the last delay once past the end."""
        return self.next_ms[min(max(reconsume_times, 0) + 2, len(self.next_ms) - 1)]

    def to_json(self) -> dict[str, Any]:
        return {"next": list(self.next_ms)}

    def describe(self) -> str:
        return f"CustomizedRetryPolicy{{next=[{', '.join(map(str, self.next_ms))}]}}"

    @classmethod
    def from_json(cls, raw: object) -> CustomizedRetryPolicy:
        obj = json_object(raw, "customizedRetryPolicy")
        values = obj.get("next")
        if values is None:
            return cls()
        if not isinstance(values, list) or not values:
            raise JsonFieldError(f"customizedRetryPolicy.next is not a non-empty list of milliseconds: {values!r}")
        if any(v is None for v in values):
            raise JsonFieldError(f"customizedRetryPolicy.next has a null delay: {values!r}")
        delays = tuple(get_int({"next": v}, "next", 0) for v in values)
        for delay in delays:
            _check_delay("customizedRetryPolicy.next", delay)
        return cls(delays)


@dataclass(frozen=True, slots=True)
class ExponentialRetryPolicy:
    initial_ms: int = 5000
    max_ms: int = 7_200_000
    multiplier: int = 2

    def next_delay_ms(self, reconsume_times: int) -> int:
        """RocketMQ 5's ExponentialRetryPolicy: min(max, initial × multiplier^reconsumeTimes), the power capped at 32."""
        return min(self.max_ms, self.initial_ms * self.multiplier ** min(max(reconsume_times, 0), 32))

    def to_json(self) -> dict[str, Any]:
        return {"initial": self.initial_ms, "max": self.max_ms, "multiplier": self.multiplier}

    def describe(self) -> str:
        return f"ExponentialRetryPolicy{{initial={self.initial_ms}, max={self.max_ms}, multiplier={self.multiplier}}}"

    @classmethod
    def from_json(cls, raw: object) -> ExponentialRetryPolicy:
        obj = json_object(raw, "exponentialRetryPolicy")
        policy = cls(get_int(obj, "initial", 5000), get_int(obj, "max", 7_200_000), get_int(obj, "multiplier", 2))
        _check_delay("exponentialRetryPolicy.initial", policy.initial_ms)
        _check_delay("exponentialRetryPolicy.max", policy.max_ms)
        if policy.max_ms < policy.initial_ms:
            raise JsonFieldError(f"exponentialRetryPolicy.max {policy.max_ms} is below its initial {policy.initial_ms}")
        if not 1 <= policy.multiplier <= 1000:
            raise JsonFieldError(f"exponentialRetryPolicy.multiplier must be 1 to 1000: {policy.multiplier}")
        return policy


def _check_delay(name: str, delay: int) -> None:
    if not 0 <= delay <= MAX_DELAY_MS:
        raise JsonFieldError(f"{name} must be 0 to {MAX_DELAY_MS} ms: {delay}")


RetryPolicy = CustomizedRetryPolicy | ExponentialRetryPolicy


@dataclass(frozen=True, slots=True)
class GroupRetryPolicy:
    type: str = CUSTOMIZED
    exponential: ExponentialRetryPolicy | None = None
    customized: CustomizedRetryPolicy | None = None

    @property
    def policy(self) -> RetryPolicy:
        """The policy in force: the one of `type`, or the default customized one when that is absent."""
        chosen = self.exponential if self.type == EXPONENTIAL else self.customized
        return chosen if chosen is not None else CustomizedRetryPolicy()

    def next_delay_ms(self, reconsume_times: int) -> int:
        return self.policy.next_delay_ms(reconsume_times)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.customized is not None:
            out["customizedRetryPolicy"] = self.customized.to_json()
        if self.exponential is not None:
            out["exponentialRetryPolicy"] = self.exponential.to_json()
        out["type"] = self.type
        return out

    def describe(self) -> str:
        """RocketMQ 5's toString of the bean (what getConsumerConfig and updateSubGroup print)."""
        exp = self.exponential.describe() if self.exponential else "null"
        cust = self.customized.describe() if self.customized else "null"
        return f"GroupRetryPolicy{{type={self.type}, exponentialRetryPolicy={exp}, customizedRetryPolicy={cust}}}"

    @classmethod
    def from_json(cls, raw: object) -> GroupRetryPolicy:
        """Read the bean (null or absent: the default). Raises ValueError naming the bad field."""
        if raw is None:
            return cls()
        obj: Mapping[str, Any] = json_object(raw, "groupRetryPolicy")
        kind = get_str(obj, "type", CUSTOMIZED)
        if kind not in TYPES:
            raise JsonFieldError(f"groupRetryPolicy.type must be {' or '.join(TYPES)}: {kind!r}")
        exp = obj.get("exponentialRetryPolicy")
        cust = obj.get("customizedRetryPolicy")
        try:
            return cls(kind, None if exp is None else ExponentialRetryPolicy.from_json(exp),
                       None if cust is None else CustomizedRetryPolicy.from_json(cust))
        except JsonFieldError as exc:
            raise JsonFieldError(f"groupRetryPolicy.{exc}") from None


DEFAULT_GROUP_RETRY_POLICY = GroupRetryPolicy()
