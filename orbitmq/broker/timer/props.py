"""Timer properties (RocketMQ 5's names) and reading a send's delivery time.

A producer asks for a time with one of:

* `TIMER_DELIVER_MS` — absolute delivery time, ms since the epoch;
* `TIMER_DELAY_SEC` — delay in seconds from the broker's receipt;
* `TIMER_DELAY_MS` — delay in milliseconds from the broker's receipt.

The broker records the resolved time in `TIMER_OUT_MS` on the stored timer
message (and keeps it on the delivered copy, so a consumer can see when it
was due); the request properties above are removed from the delivered copy.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Final

from orbitmq.common.properties import TIMER_DELAY_MS, TIMER_DELAY_SEC, TIMER_DELIVER_MS
from orbitmq.errors import MessageIllegal

#: Set by the broker: the resolved delivery time in ms.
TIMER_OUT_MS: Final = "TIMER_OUT_MS"
#: Set by the broker: when the timer message was accepted, in ms.
TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"

REQUEST_NAMES: Final = (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS)

#: RocketMQ 5's delete marker: a message carrying `<real topic>+<UNIQ_KEY>` of a pending timer
#: cancels it. The marker waits in the timer topic like a timer and is never delivered itself.
TIMER_DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"

#: The internal topic timer messages wait in (RocketMQ 5's name), one queue.
TIMER_TOPIC: Final = "rmq_sys_wheel_timer"


class TimerPropertyError(MessageIllegal, ValueError):
    """A timer property that is not a usable time: answered 13 MESSAGE_ILLEGAL with this remark."""

    def __init__(self, remark: str) -> None:
        super().__init__(remark)


def delete_key(topic: str, uniq_key: str) -> str:
    """The TIMER_DEL_UNIQKEY value naming a timer of `topic` (RocketMQ 5's form)."""
    return f"{topic}+{uniq_key}"


def has_timer(properties: Mapping[str, str]) -> bool:
    return any(name in properties for name in REQUEST_NAMES)


def delivery_time(properties: Mapping[str, str], now_ms: int, max_delay_ms: int) -> int | None:
    """The delivery time a message asks for, or None when it asks for none.

    The first of TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS present
    wins. Raises TimerPropertyError for a value that is not an integer, a
    negative delay, or a time further than `max_delay_ms` from `now_ms`.
    """
    for name in REQUEST_NAMES:
        raw = properties.get(name)
        if raw is None:
            continue
        try:
            value = int(raw.strip())
        except ValueError:
            raise TimerPropertyError(f"timer property {name}={raw!r} is not an integer") from None
        if name == TIMER_DELIVER_MS:
            deliver = value
        else:
            if value < 0:
                raise TimerPropertyError(f"timer property {name}={value} must not be negative")
            deliver = now_ms + (value * 1000 if name == TIMER_DELAY_SEC else value)
        if deliver - now_ms > max_delay_ms:
            raise TimerPropertyError(
                f"timer message delivery time {deliver} is more than {max_delay_ms // 1000}s "
                f"(timerMaxDelaySec) ahead of the broker's time {now_ms}"
            )
        return deliver
    return None


def clear_request(properties: MutableMapping[str, str]) -> None:
    """Remove the producer's timer request properties."""
    for name in REQUEST_NAMES:
        properties.pop(name, None)


def stored_delivery_time(properties: Mapping[str, str]) -> int | None:
    """TIMER_OUT_MS of a stored timer message, None when missing or malformed."""
    raw = properties.get(TIMER_OUT_MS)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        return None
