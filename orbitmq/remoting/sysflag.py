"""PULL_MESSAGE's `sysFlag` bits (RocketMQ's PullSysFlag, protocol reference §3.2).

The message sysflag bits (RocketMQ's MessageSysFlag) belong to the stored
record and live in `orbitmq.common.sysflag`, where the store can reach them.
"""

from __future__ import annotations

from typing import Final


class PullSysFlag:
    """Bits of PullMessageRequestHeader.sysFlag: plain ints, so testing one costs no enum arithmetic."""

    #: The request carries the consumer's offset to commit (commitOffset).
    COMMIT_OFFSET: Final = 0x1
    #: The broker may hold the pull until a message arrives (long polling).
    SUSPEND: Final = 0x2
    #: The broker builds the subscription from the request's expression, not from heartbeats.
    SUBSCRIPTION: Final = 0x4
    #: Class-filter (filter server) mode.
    CLASS_FILTER: Final = 0x8
    #: Sent by lite pull consumers; a 4.9.7 broker does not act on it.
    LITE_PULL_MESSAGE: Final = 0x10

