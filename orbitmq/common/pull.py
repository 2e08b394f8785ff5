"""PullResult: what one PULL_MESSAGE answered, as RocketMQ's PullResult/PullResultExt hold it.

One definition for the client's consumers, the admin tools and the Spark
connector. `messages` holds the decoded messages of a FOUND answer;
`message_binary` holds the raw body instead when the caller asked for it
undecoded (the Spark connector decodes bodies column-wise), as Java's
PullResultExt carries `messageBinary` until the client decodes it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from orbitmq.common.message import MessageExt


class PullStatus(str, enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"  # the offset is the queue's max offset
    NO_MATCHED_MSG = "NO_MATCHED_MSG"  # scanned entries matched no filter; continue at next_begin_offset
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"  # below min or past max; next_begin_offset is the broker's correction


@dataclass(frozen=True, slots=True)
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    #: The broker id the broker suggests pulling from next (0: the master).
    suggest_which_broker_id: int = 0
    #: The undecoded records of a FOUND answer, when asked for instead of `messages`.
    message_binary: bytes = b""
