"""Results handed to applications: send results, pull results, consume results.

`PullResult` and `PullStatus` are `orbitmq.common.pull`'s, re-exported here.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from orbitmq.client.queue import MessageQueue
from orbitmq.common.pull import PullResult, PullStatus
from orbitmq.remoting.codes import ResponseCode


class SendStatus(str, enum.Enum):
    """RocketMQ's SendStatus; only SEND_OK means stored and (if asked) flushed and replicated."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


#: Broker response codes that mean "stored" (§3.1), with the status they map to.
SEND_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclass(frozen=True)
class SendResult:
    """`msg_id` is the client's UNIQ_KEY (comma-joined for a batch); `offset_msg_id` the broker's id(s)."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    #: A timed message's recall handle (RocketMQ 5.3's `recallHandle`): `Producer.recall_message` takes it.
    recall_handle: str = ""


#: Pull response codes and what they mean to a client (§3.2).
PULL_STATUS_BY_CODE: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


class ConsumeResult(str, enum.Enum):
    """What a concurrent listener returns (ConsumeConcurrentlyStatus)."""

    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    RECONSUME_LATER = "RECONSUME_LATER"


class ConsumeOrderlyResult(str, enum.Enum):
    """What an orderly listener returns (ConsumeOrderlyStatus)."""

    SUCCESS = "SUCCESS"
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"
    #: With ConsumeOrderlyContext.auto_commit off: commit everything consumed so far (RocketMQ's, deprecated there).
    COMMIT = "COMMIT"
    #: With auto_commit off: consume everything not yet committed again after a pause.
    ROLLBACK = "ROLLBACK"


__all__ = [
    "PULL_STATUS_BY_CODE",
    "SEND_STATUS_BY_CODE",
    "ConsumeOrderlyResult",
    "ConsumeResult",
    "PullResult",
    "PullStatus",
    "SendResult",
    "SendStatus",
]
