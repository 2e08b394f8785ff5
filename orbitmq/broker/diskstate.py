"""Failing writes reported once per change of state, not once per attempt.

A full disk makes every send and every periodic checkpoint fail until space is
freed. `WriteHealth` turns that stream of failures into two log lines: one
when writes start failing ("disk full" when the cause is ENOSPC/EDQUOT), one
when a write succeeds again. A broker keeps one for the message store (sends
are then answered 14 SERVICE_NOT_AVAILABLE with `DISK_FULL_REMARK` from the
first failure on, by the broker's dispatch) and one per metadata file it rewrites
periodically (the timer checkpoint, the delay offsets, the JSON tables).
"""

from __future__ import annotations

import errno
import logging

from orbitmq.errors import DiskFull

log = logging.getLogger("orbitmq.broker")

#: The errnos that mean "no space": a full disk or an exhausted quota.
NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})

DISK_FULL_REMARK = (
    "service not available now, disk full: the broker cannot store messages until space is freed"
)


def is_disk_full(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from, says the disk has no space left."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, DiskFull):
            return True
        if isinstance(current, OSError) and current.errno in NO_SPACE_ERRNOS:
            return True
        current = current.__cause__ or current.__context__
    return False


class WriteHealth:
    """Whether writes to `what` currently fail; logs only when that changes."""

    def __init__(self, what: str, logger: logging.Logger = log) -> None:
        self.what = what
        self.failing = False
        self.disk_full = False
        self._log = logger

    def failed(self, exc: BaseException) -> None:
        """A write failed: the first failure of a run is logged (with its traceback unless the
        disk is simply full); the following ones are not."""
        full = is_disk_full(exc)
        if self.failing and full == self.disk_full:
            return
        self.failing = True
        self.disk_full = full
        if full:
            self._log.error("%s: disk full, writes fail until space is freed (%s)", self.what, _reason(exc))
        else:
            self._log.error("%s: writes fail (%s)", self.what, _reason(exc), exc_info=exc)

    def succeeded(self) -> None:
        """A write succeeded: logged only when it ends a run of failures."""
        if self.failing:
            self.failing = self.disk_full = False
            self._log.warning("%s: writable again", self.what)


def _reason(exc: BaseException) -> str:
    for current in (exc, exc.__cause__, exc.__context__):
        if isinstance(current, OSError) and current.strerror:
            return current.strerror
    return str(exc) or type(exc).__name__
