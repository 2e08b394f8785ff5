"""Messages that expire (OrbitMQ's own): a deadline after which a message is not delivered.

* Per message: the property `ORBITMQ_TTL_MS` (set by the client, `Message(..., ttl_ms=...)`),
  a positive number of milliseconds counted from the broker's store time of the message
  (its STORETIMESTAMP; for a timed message, the time it was delivered to its topic). The
  broker's clock alone decides, so client clock skew does not matter.
* Per topic: the topic attribute `orbitmq.ttl.ms` (RocketMQ 5's attribute form,
  `updateTopic ... attributes "+orbitmq.ttl.ms=60000"`), the TTL of messages without the
  property; 0 means none. A topic is checked at pull time only when it has the attribute:
  the first send carrying `ORBITMQ_TTL_MS` to a topic without it sets `orbitmq.ttl.ms=0`
  (persisted in topics.json), so pulls of other topics pay nothing.

A pull skips expired records as tag filtering skips unmatched ones (the records stay
in the store; offsets move past them) and counts each one once per group and queue
(`BrokerStats.expired_counts()`; counted again after a broker restart if pulled again).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from orbitmq.common.message import MessageExt
from orbitmq.common.properties import TTL_MS
from orbitmq.common.record import decode_record
from orbitmq.common.topic_config import TTL_ATTRIBUTE
from orbitmq.errors import MessageIllegal, OrbitMQError
from orbitmq.store.api import MessageFilter

TTL_PROPERTY: Final = TTL_MS
TOPIC_TTL_ATTRIBUTE: Final = TTL_ATTRIBUTE
#: Group attribute: what becomes of a message that expired before the group consumed it.
EXPIRED_POLICY_ATTRIBUTE: Final = "orbitmq.expired.policy"
#: Skipped (the default) / sent to the group's %DLQ% (flagged with EXPIRED_PROPERTY) when first skipped.
POLICY_DROP: Final = "DROP"
POLICY_DLQ: Final = "DLQ"
#: Set on a dead letter that expired: the deadline it missed, ms since the epoch.
EXPIRED_PROPERTY: Final = "ORBITMQ_EXPIRED_AT_MS"


def message_ttl(properties: Mapping[str, str]) -> int | None:
    """The TTL a message asks for; MessageIllegal (13) when the property is not a positive integer."""
    raw = properties.get(TTL_PROPERTY)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise MessageIllegal(f"{TTL_PROPERTY}={raw!r} is not an integer") from None
    if value <= 0:
        raise MessageIllegal(f"{TTL_PROPERTY}={value} must be positive")
    return value


def topic_ttl(value: str | None) -> int | None:
    """A topic's default TTL from its attribute: None when TTLs are never checked, 0 for no default."""
    if value is None:
        return None
    try:
        return max(int(value), 0)
    except ValueError:
        return 0




class ExpiryFilter:
    """Wraps a pull's filter: records past their deadline do not match; each is counted once.

    `counted_below` is the queue offset below which expired records were already
    counted for this group and queue; `expired` and `counted_below` are read back
    after the read.
    """

    __slots__ = ("clock_ms", "counted_below", "dead", "default_ttl", "expired", "inner")

    def __init__(
        self, inner: MessageFilter, default_ttl: int, clock_ms: Callable[[], int], counted_below: int,
        keep_dead: bool = False,
    ) -> None:
        #: With the DLQ policy: each newly expired message, whole, with the deadline it missed.
        self.dead: list[tuple[MessageExt, int]] | None = [] if keep_dead else None
        self.inner = inner
        self.default_ttl = default_ttl
        self.clock_ms = clock_ms
        self.expired = 0
        self.counted_below = counted_below

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return self.inner.is_matched_by_consume_queue(tags_code)

    def is_matched_by_commit_log(self, record: memoryview, properties: Mapping[str, str] | None) -> bool:
        try:
            msg = decode_record(record, with_body=False, decompress=False)
        except OrbitMQError:
            return self.inner.is_matched_by_commit_log(record, properties)
        raw = msg.properties.get(TTL_PROPERTY)
        ttl = self.default_ttl
        if raw is not None:
            try:
                ttl = int(raw)
            except ValueError:
                pass
        if ttl > 0 and msg.store_timestamp + ttl <= self.clock_ms():
            if msg.queue_offset >= self.counted_below:
                self.expired += 1
                self.counted_below = msg.queue_offset + 1
                if self.dead is not None:
                    self.dead.append((decode_record(record, decompress=False), msg.store_timestamp + ttl))
            return False
        return self.inner.is_matched_by_commit_log(record, msg.properties)


class ExpiryCounter:
    """Where each (group, topic, queue) stands in counting expired records (in memory)."""

    def __init__(self, record: Callable[[str, str, int], None]) -> None:
        self._record = record
        self._counted: dict[tuple[str, str, int], int] = {}

    def filter(self, inner: MessageFilter, default_ttl: int, clock_ms: Callable[[], int], group: str, topic: str,
               queue_id: int, keep_dead: bool = False) -> ExpiryFilter:
        counted = self._counted.get((group, topic, queue_id), 0)
        return ExpiryFilter(inner, default_ttl, clock_ms, counted, keep_dead)

    def done(self, f: ExpiryFilter, group: str, topic: str, queue_id: int) -> None:
        if f.expired:
            self._counted[(group, topic, queue_id)] = f.counted_below
            self._record(group, topic, f.expired)
