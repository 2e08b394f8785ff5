"""The client's Message: the shared model with a friendlier constructor.

`Message("T", b"body", tags="TagA", keys=["k1"], properties={"a": "1"})`
sets the system properties through their accessors and the user properties
through `put_user_property`, so reserved names and separator characters are
refused at construction rather than at the broker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from orbitmq.common.message import Message as _Message
from orbitmq.common.message import MessageExt
from orbitmq.common.properties import TIMER_DELAY_MS, TIMER_DELIVER_MS, TTL_MS
from orbitmq.errors import MessageValidationError

__all__ = ["Message", "MessageExt"]


class Message(_Message):
    __slots__ = ()

    def __init__(
        self,
        topic: str,
        body: bytes = b"",
        *,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        properties: Mapping[str, str] | None = None,
        flag: int = 0,
        delay_time_level: int = 0,
        deliver_time_ms: int | None = None,
        delay_ms: int | None = None,
        ttl_ms: int | None = None,
        wait_store_msg_ok: bool = True,
    ) -> None:
        super().__init__(topic, bytes(body), flag, {})
        if tags is not None:
            self.tags = tags
        if keys is not None:
            self.keys = keys
        if delay_time_level:
            self.delay_time_level = delay_time_level
        # Timed messages (beyond RocketMQ 4's levels): the broker delivers at an
        # absolute time (ms since the epoch) or after a delay in ms from receipt.
        if deliver_time_ms is not None and delay_ms is not None:
            raise MessageValidationError("give deliver_time_ms or delay_ms, not both")
        if deliver_time_ms is not None:
            if deliver_time_ms <= 0:
                raise MessageValidationError(f"deliver_time_ms must be a positive epoch time in ms, not {deliver_time_ms}")
            self.properties[TIMER_DELIVER_MS] = str(int(deliver_time_ms))
        if delay_ms is not None:
            if delay_ms < 0:
                raise MessageValidationError(f"delay_ms must not be negative, not {delay_ms}")
            self.properties[TIMER_DELAY_MS] = str(int(delay_ms))
        # OrbitMQ's time-to-live: not delivered once `ttl_ms` passed after the broker stored it.
        if ttl_ms is not None:
            if ttl_ms <= 0:
                raise MessageValidationError(f"ttl_ms must be positive, not {ttl_ms}")
            self.properties[TTL_MS] = str(int(ttl_ms))
        # Java's Message constructor always sets WAIT; brokers treat absent as true anyway.
        self.wait_store_msg_ok = wait_store_msg_ok
        for name, value in (properties or {}).items():
            self.put_user_property(name, value)
