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
    CloneGroupOffsetRequestHeader,
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
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PutKVConfigRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    QueryTopicConsumeByWhoRequestHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    ReplyMessageRequestHeader,
    ResetOffsetRequestHeader,
    ResumeCheckHalfMessageRequestHeader,
    UnRegisterBrokerRequestHeader,
    UnregisterClientRequestHeader,
    ViewBrokerStatsDataRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.header_base import CommandHeader, Long, header

# --- send (§3.1) -------------------------------------------------------------------------


@header
class SendMessageRequestHeader(CommandHeader):
    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: Long
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False
    batch: bool = False
    max_reconsume_times: int | None = None
    bname: str | None = None

    def to_v2(self) -> SendMessageRequestHeaderV2:
        """The compact twin, as the Java producer sends with SEND_MESSAGE_V2."""
        return SendMessageRequestHeaderV2(
            a=self.producer_group, b=self.topic, c=self.default_topic, d=self.default_topic_queue_nums,
            e=self.queue_id, f=self.sys_flag, g=self.born_timestamp, h=self.flag, i=self.properties,
            j=self.reconsume_times, k=self.unit_mode, l=self.max_reconsume_times, m=self.batch, n=self.bname,
        )


@header
class SendMessageRequestHeaderV2(CommandHeader):
    """SendMessageRequestHeader under one-letter keys (codes 310, 320, 325)."""

    a: str  # producerGroup
    b: str  # topic
    c: str  # defaultTopic
    d: int  # defaultTopicQueueNums
    e: int  # queueId
    f: int  # sysFlag
    g: Long  # bornTimestamp
    h: int  # flag
    i: str | None = None  # properties
    j: int | None = None  # reconsumeTimes
    k: bool | None = False  # unitMode (Boolean in Java; the 4.9.7 producer always sends it)
    l: int | None = None  # maxReconsumeTimes
    m: bool | None = False  # batch
    n: str | None = None  # bname

    def to_v1(self) -> SendMessageRequestHeader:
        """The long form the broker works with."""
        return SendMessageRequestHeader(
            producer_group=self.a, topic=self.b, default_topic=self.c, default_topic_queue_nums=self.d,
            queue_id=self.e, sys_flag=self.f, born_timestamp=self.g, flag=self.h, properties=self.i,
            reconsume_times=self.j, unit_mode=bool(self.k), batch=bool(self.m),
            max_reconsume_times=self.l, bname=self.n,
        )


_V2_CODES = frozenset((RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2))


def parse_send_header(request: RemotingCommand) -> SendMessageRequestHeader:
    """The send header of a SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE or SEND_REPLY_MESSAGE(_V2) request."""
    if request.code in _V2_CODES:
        return SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields).to_v1()
    return SendMessageRequestHeader.from_ext_fields(request.ext_fields)


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
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "CheckTransactionStateRequestHeader",
    "CloneGroupOffsetRequestHeader",
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
    "GetConsumeStatsInBrokerHeader",
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
    "NotifyConsumerIdsChangedRequestHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PutKVConfigRequestHeader",
    "QueryConsumeQueueRequestHeader",
    "QueryConsumeTimeSpanRequestHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "QueryCorrectionOffsetHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "ReplyMessageRequestHeader",
    "ResetOffsetRequestHeader",
    "ResumeCheckHalfMessageRequestHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "UnRegisterBrokerRequestHeader",
    "UnregisterClientRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
    "ViewBrokerStatsDataRequestHeader",
    "ViewMessageRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
    "header",
    "parse_send_header",
]
