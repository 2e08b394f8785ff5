"""Typed headers of RocketMQ 5's POP consumption requests (POP reference §1).

Each class mirrors the Java header of the same name (package
`org.apache.rocketmq.remoting.protocol.header`); the wire names are the Java
field names. BATCH_ACK_MESSAGE has no header: its body is a `BatchAckMessageRequestBody`
(orbitmq/broker/pop/records.py reads and writes it).

    header = PopMessageRequestHeader.from_ext_fields(request.ext_fields)
    response.ext_fields = PopMessageResponseHeader(...).to_ext_fields()

The `extraInfo` strings and the `startOffsetInfo`/`msgOffsetInfo`/
`orderCountInfo` summaries are built and parsed by orbitmq/common/extra_info.py.
"""

from __future__ import annotations

from orbitmq.remoting.header_base import CommandHeader, Long, header


@header
class PopMessageRequestHeader(CommandHeader):
    """POP_MESSAGE (200050). `queue_id` < 0: every readable queue of the topic (and its POP retry topic)."""

    consumer_group: str
    topic: str
    queue_id: int
    max_msg_nums: int
    invisible_time: Long
    poll_time: Long
    born_time: Long
    init_mode: int
    exp_type: str | None = None
    exp: str | None = None
    order: bool | None = None
    attempt_id: str | None = None
    bname: str | None = None


@header
class PopMessageResponseHeader(CommandHeader):
    pop_time: Long
    invisible_time: Long
    revive_qid: int
    rest_num: Long
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None


@header
class PeekMessageRequestHeader(CommandHeader):
    """PEEK_MESSAGE (200052): read from the POP start offset without any state change."""

    consumer_group: str
    topic: str
    queue_id: int
    max_msg_nums: int
    bname: str | None = None


@header
class PeekMessageResponseHeader(CommandHeader):
    """A peek answers with the POP response header holding only restNum."""

    rest_num: Long


@header
class AckMessageRequestHeader(CommandHeader):
    """ACK_MESSAGE (200051). `topic` is the real topic (the POP retry topic for a retried message)."""

    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: Long
    bname: str | None = None


@header
class ChangeInvisibleTimeRequestHeader(CommandHeader):
    """CHANGE_MESSAGE_INVISIBLETIME (200053): the ack fields plus the new invisible time from now."""

    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: Long
    invisible_time: Long
    bname: str | None = None


@header
class ChangeInvisibleTimeResponseHeader(CommandHeader):
    pop_time: Long
    invisible_time: Long
    revive_qid: int


@header
class NotificationRequestHeader(CommandHeader):
    """NOTIFICATION (200054): long-poll "would a POP find something?"."""

    consumer_group: str
    topic: str
    queue_id: int
    poll_time: Long
    born_time: Long
    order: bool | None = None
    attempt_id: str | None = None
    bname: str | None = None


@header
class NotificationResponseHeader(CommandHeader):
    has_msg: bool
    polling_full: bool = False


@header
class PollingInfoRequestHeader(CommandHeader):
    """POLLING_INFO (200055): how many POP requests are parked for the group on the queue."""

    consumer_group: str
    topic: str
    queue_id: int
    bname: str | None = None


@header
class PollingInfoResponseHeader(CommandHeader):
    polling_num: int
