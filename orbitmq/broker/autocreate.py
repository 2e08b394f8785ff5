"""Limits on topics that clients create by sending (autoCreateTopicEnable).

With auto-creation on, any client can make the broker create a topic by
sending to a new name, and each topic costs queue files on disk and an entry
in every registration. RocketMQ bounds neither; an operator here can:

* `autoCreateTopicMaxCount` — no topic is auto-created once the broker holds
  this many topics (all kinds counted). Such sends are answered
  TOPIC_NOT_EXIST, as when auto-creation is off; an admin can still create
  topics (UPDATE_AND_CREATE_TOPIC).
* `autoCreateTopicPerMinute` — auto-creations allowed per minute (a token
  bucket: up to that many at once, refilled evenly over the minute). Beyond
  it a send is answered SYSTEM_BUSY ("[OVERLOAD]...") and may try again later.

Pure state with an injected clock; owned by the broker's event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from orbitmq.errors import BrokerError, SystemBusy, TopicNotExist


class AutoCreateLimiter:
    """Decides whether one more topic may be auto-created now."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._tokens: float | None = None  # filled to the per-minute allowance on first use
        self._last = 0.0

    def _refill(self, per_minute: int) -> float:
        now = self._monotonic()
        if self._tokens is None:
            self._tokens = float(per_minute)
        else:
            self._tokens = min(float(per_minute), self._tokens + (now - self._last) * per_minute / 60.0)
        self._last = now
        return self._tokens

    def refusal(self, topic: str, topic_count: int, max_count: int, per_minute: int) -> BrokerError | None:
        """The refusal to auto-create `topic` (TopicNotExist or SystemBusy), or None when it may be created."""
        if topic_count >= max_count:
            remark = (
                f"topic[{topic}] not exist, and the broker auto-creates no more topics: it holds "
                f"{topic_count} (autoCreateTopicMaxCount={max_count}); ask an administrator to create it"
            )
            return TopicNotExist(remark)
        if self._refill(per_minute) < 1.0:
            remark = (
                f"[OVERLOAD]topic[{topic}] not created: more than {per_minute} topics auto-created in a minute "
                f"(autoCreateTopicPerMinute); try again later"
            )
            return SystemBusy(remark)
        return None

    def created(self) -> None:
        """Count one auto-created topic against the rate."""
        if self._tokens is not None:
            self._tokens -= 1.0
