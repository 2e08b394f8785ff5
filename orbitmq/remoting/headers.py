"""Typed custom headers of RocketMQ 4.9.7 requests and responses (protocol reference §3).

Each class mirrors the Java header of the same name. Fields without a default
are required (`@CFNotNull` in Java); see header_base.py for the rules.

    header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
    response.ext_fields = PullMessageResponseHeader(...).to_ext_fields()

`bname` (broker name, 4.9.5+ clients) is accepted on the request headers that
carry it and may be ignored by servers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

# The admin, client-management and name server headers live in admin_headers.py;
# they are re-exported here so every header is importable from this module.
from orbitmq.remoting.admin_headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    CreateTopicRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    GetBrokerConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    GetConsumeStatsRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    ReplyMessageRequestHeader,
    ResetOffsetRequestHeader,
    UnRegisterBrokerRequestHeader,
    UnregisterClientRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.header_base import CommandHeader, Long, header, parser

# RocketMQ 5's POP headers (re-exported for the same reason).
from orbitmq.remoting.pop_headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PeekMessageResponseHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)

# --- send (§3.1) -------------------------------------------------------------------------


@header
class SendMessageRequestHeader(CommandHeader):
    """The send header, in both wire forms.

    SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324) carry it under its field
    names (`from_ext_fields`/`to_ext_fields`); SEND_MESSAGE_V2 (310),
    SEND_BATCH_MESSAGE (320) and SEND_REPLY_MESSAGE_V2 (325) as Java's
    SendMessageRequestHeaderV2, the same fields under one-letter keys
    (`from_compact_fields`/`to_compact_fields`, `parse_send_header`).

    Java requires producerGroup, defaultTopic, defaultTopicQueueNums, sysFlag,
    bornTimestamp and flag too; the broker reads them as absent (a number as
    its default here) instead, as OrbitMQ always has. Every producer sends them.
    """

    producer_group: str | None = None
    topic: str
    default_topic: str | None = None
    default_topic_queue_nums: int = 4
    queue_id: int
    sys_flag: int = 0
    born_timestamp: Long = 0
    flag: int = 0
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool | None = False  # Boolean in V2; the 4.9.7 producer always sends it
    batch: bool | None = False
    max_reconsume_times: int | None = None
    bname: str | None = None

    COMPACT_NAMES: ClassVar[Mapping[str, str]] = {
        "producer_group": "a", "topic": "b", "default_topic": "c", "default_topic_queue_nums": "d",
        "queue_id": "e", "sys_flag": "f", "born_timestamp": "g", "flag": "h", "properties": "i",
        "reconsume_times": "j", "unit_mode": "k", "max_reconsume_times": "l", "batch": "m", "bname": "n",
    }
    #: Every field a 4.9.5+ Java producer sends on every send (maxReconsumeTimes only to a retry topic).
    USUAL_FIELDS: ClassVar[frozenset[str]] = frozenset(COMPACT_NAMES) - {"max_reconsume_times"}


def is_compact_send(fields: Mapping[str, str] | None) -> bool:
    """Whether a send's extFields use the V2 letters (the broker accepts either form under any send code)."""
    return fields is not None and "b" in fields and "topic" not in fields


def send_topic(fields: Mapping[str, str] | None) -> str:
    """The topic a send names, read as `parse_send_header` reads it, without parsing the rest ("" when absent)."""
    if not fields:
        return ""
    return (fields.get("b") if is_compact_send(fields) else fields.get("topic")) or ""


_parse_send_compact = parser(SendMessageRequestHeader, compact=True)
_parse_send = parser(SendMessageRequestHeader)


def parse_send_header(request: RemotingCommand) -> SendMessageRequestHeader:
    """The send header of a SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE or SEND_REPLY_MESSAGE(_V2) request."""
    fields = request.ext_fields
    return _parse_send_compact(fields) if is_compact_send(fields) else _parse_send(fields)


@header
class SendMessageResponseHeader(CommandHeader):
    msg_id: str
    queue_id: int
    queue_offset: Long
    transaction_id: str | None = None
    # Not header fields in Java but always added to send responses by a 4.9.7 broker.
    msg_region: str | None = None
    trace_on: bool | None = None

    WIRE_NAMES: ClassVar[Mapping[str, str]] = {"msg_region": "MSG_REGION", "trace_on": "TRACE_ON"}


# --- pull (§3.2) ---------------------------------------------------------------------------


@header
class PullMessageRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: Long
    max_msg_nums: int
    sys_flag: int
    commit_offset: Long
    suspend_timeout_millis: Long
    sub_version: Long
    subscription: str | None = None
    expression_type: str | None = None
    bname: str | None = None


@header
class PullMessageResponseHeader(CommandHeader):
    suggest_which_broker_id: Long
    next_begin_offset: Long
    min_offset: Long
    max_offset: Long


# --- consumer offsets, groups, send-back (§3.3-3.5) -------------------------------------------


@header
class QueryConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: int
    bname: str | None = None


@header
class QueryConsumerOffsetResponseHeader(CommandHeader):
    offset: Long


@header
class UpdateConsumerOffsetRequestHeader(CommandHeader):
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: Long
    bname: str | None = None


@header
class GetConsumerListByGroupRequestHeader(CommandHeader):
    consumer_group: str


@header
class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    consumer_group: str


@header
class ConsumerSendMsgBackRequestHeader(CommandHeader):
    offset: Long  # commit-log offset of the message
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None
    bname: str | None = None
    # OrbitMQ's own fields (Java brokers ignore unknown keys): a delay in ms, the consumer's last
    # error text and its attempts so far, recorded and served by an OrbitMQ broker.
    orbitmq_delay_ms: Long | None = None
    orbitmq_last_error: str | None = None
    orbitmq_attempts: int | None = None


# --- transactions (§3.6) ----------------------------------------------------------------------


@header
class EndTransactionRequestHeader(CommandHeader):
    producer_group: str
    tran_state_table_offset: Long
    commit_log_offset: Long
    commit_or_rollback: int  # 0 unknown, 8 commit, 12 rollback
    msg_id: str
    from_transaction_check: bool | None = False
    transaction_id: str | None = None
    bname: str | None = None


@header
class CheckTransactionStateRequestHeader(CommandHeader):
    tran_state_table_offset: Long
    commit_log_offset: Long
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None


# --- offsets, times and lookups (§3.7) ----------------------------------------------------------


@header
class GetMaxOffsetRequestHeader(CommandHeader):
    topic: str
    queue_id: int
    bname: str | None = None


@header
class GetMaxOffsetResponseHeader(CommandHeader):
    offset: Long


@header
class GetMinOffsetRequestHeader(CommandHeader):
    topic: str
    queue_id: int
    bname: str | None = None


@header
class GetMinOffsetResponseHeader(CommandHeader):
    offset: Long


@header
class SearchOffsetRequestHeader(CommandHeader):
    topic: str
    queue_id: int
    timestamp: Long
    bname: str | None = None


@header
class SearchOffsetResponseHeader(CommandHeader):
    offset: Long


@header
class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    topic: str
    queue_id: int
    bname: str | None = None


@header
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    timestamp: Long


@header
class QueryMessageRequestHeader(CommandHeader):
    topic: str
    key: str
    max_num: int
    begin_timestamp: Long
    end_timestamp: Long
    # An extra ext field, not a Java header field: query by UNIQ_KEY instead of KEYS.
    unique_key_query: bool | None = None

    WIRE_NAMES: ClassVar[Mapping[str, str]] = {"unique_key_query": "_UNIQUE_KEY_QUERY"}


@header
class QueryMessageResponseHeader(CommandHeader):
    index_last_update_timestamp: Long
    index_last_update_phyoffset: Long


@header
class ViewMessageRequestHeader(CommandHeader):
    offset: Long  # commit-log offset

__all__ = [
    "AckMessageRequestHeader",
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "ChangeInvisibleTimeRequestHeader",
    "ChangeInvisibleTimeResponseHeader",
    "CheckTransactionStateRequestHeader",
    "CommandHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteKVConfigRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "DeleteTopicRequestHeader",
    "EndTransactionRequestHeader",
    "GetBrokerConfigResponseHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetConsumerStatusRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "GetProducerConnectionListRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "Long",
    "NotificationRequestHeader",
    "NotificationResponseHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "PeekMessageRequestHeader",
    "PeekMessageResponseHeader",
    "PollingInfoRequestHeader",
    "PollingInfoResponseHeader",
    "PopMessageRequestHeader",
    "PopMessageResponseHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PutKVConfigRequestHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "ReplyMessageRequestHeader",
    "ResetOffsetRequestHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "SendMessageRequestHeader",
    "SendMessageResponseHeader",
    "UnRegisterBrokerRequestHeader",
    "UnregisterClientRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
    "ViewMessageRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
    "header",
    "is_compact_send",
    "parse_send_header",
    "send_topic",
]
