"""Time arguments of the admin commands, in mqadmin's notations."""

from __future__ import annotations

import datetime as _dt
import re
import time

_PATTERN = re.compile(r"^(\d{4})-(\d{2})-(\d{2})#(\d{2}):(\d{2}):(\d{2}):(\d{3})$")


def parse_timestamp(text: str, now_ms: int | None = None) -> int:
    """Milliseconds since the epoch from `now`, a number of ms, or `yyyy-MM-dd#HH:mm:ss:SSS`.

    The dated form is read in the local time zone, as mqadmin's
    `resetOffsetByTime -s` does. Raises ValueError with the accepted forms.
    """
    value = text.strip()
    if value.lower() == "now":
        return now_ms if now_ms is not None else int(time.time() * 1000)
    if value.isdigit():
        return int(value)
    m = _PATTERN.match(value)
    if m is None:
        raise ValueError(
            f"bad time {text!r}: use 'now', milliseconds since the epoch, or yyyy-MM-dd#HH:mm:ss:SSS"
        )
    year, month, day, hour, minute, second, millis = (int(g) for g in m.groups())
    try:
        moment = _dt.datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise ValueError(f"bad time {text!r}: {exc}") from None
    return int(moment.timestamp()) * 1000 + millis
