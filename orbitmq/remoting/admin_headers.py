"""Typed headers of administration, client management and name server requests (protocol reference §3.8-3.12).

Same rules as headers.py (which re-exports everything here): fields without a
default are required, the wire name is the camelCase form unless listed in
`WIRE_NAMES`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from orbitmq.remoting.header_base import CommandHeader, Long, header

# --- topic administration and client management (§3.9-3.12) ---------------------------------------


@header
class CreateTopicRequestHeader(CommandHeader):
    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str  # SINGLE_TAG or MULTI_TAG
    order: bool
    topic_sys_flag: int | None = None
    #: RocketMQ 5: attribute changes, "+name=value,-name" (OrbitMQ reads orbitmq.ttl.ms).
    attributes: str | None = None


@header
class DeleteTopicRequestHeader(CommandHeader):
    topic: str


@header
class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    group_name: str
    remove_offset: bool = False


@header
class UnregisterClientRequestHeader(CommandHeader):
    client_id: str
    producer_group: str | None = None
    consumer_group: str | None = None

    WIRE_NAMES: ClassVar[Mapping[str, str]] = {"client_id": "clientID"}


@header
class GetConsumerConnectionListRequestHeader(CommandHeader):
    consumer_group: str


@header
class GetProducerConnectionListRequestHeader(CommandHeader):
    producer_group: str


@header
class GetConsumeStatsRequestHeader(CommandHeader):
    consumer_group: str
    topic: str | None = None


@header
class GetTopicStatsInfoRequestHeader(CommandHeader):
    topic: str


@header
class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (admin -> broker) and RESET_CONSUMER_CLIENT_OFFSET (broker -> client)."""

    topic: str
    group: str
    timestamp: Long  # ms; -1 resets to the max offset
    is_force: bool

    WIRE_NAMES: ClassVar[Mapping[str, str]] = {"is_force": "isForce"}


@header
class GetConsumerRunningInfoRequestHeader(CommandHeader):
    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@header
class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None


@header
class GetConsumerStatusRequestHeader(CommandHeader):
    topic: str
    group: str
    client_addr: str | None = None


@header
class ReplyMessageRequestHeader(CommandHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (broker -> requesting client)."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: Long
    flag: int
    born_host: str  # ip:port
    store_host: str  # ip:port
    store_timestamp: Long
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool = False


# --- name server (§3.8) ------------------------------------------------------------------------


@header
class GetRouteInfoRequestHeader(CommandHeader):
    topic: str
    accept_standard_json_only: bool | None = None


@header
class RegisterBrokerRequestHeader(CommandHeader):
    broker_name: str
    broker_addr: str  # ip:port
    cluster_name: str
    ha_server_addr: str  # ip:haPort
    broker_id: Long  # 0 = master
    compressed: bool = False
    body_crc32: int = 0

    WIRE_NAMES: ClassVar[Mapping[str, str]] = {"body_crc32": "bodyCrc32"}


@header
class RegisterBrokerResponseHeader(CommandHeader):
    ha_server_addr: str | None = None
    master_addr: str | None = None


@header
class UnRegisterBrokerRequestHeader(CommandHeader):
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@header
class QueryDataVersionRequestHeader(CommandHeader):
    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@header
class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool


@header
class GetKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str


@header
class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = None


@header
class PutKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str
    value: str


@header
class DeleteKVConfigRequestHeader(CommandHeader):
    namespace: str
    key: str


@header
class GetKVListByNamespaceRequestHeader(CommandHeader):
    namespace: str


@header
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str


@header
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipe_topic_count: int


@header
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    broker_name: str


@header
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    add_topic_count: int


@header
class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    topic: str
    cluster_name: str | None = None


@header
class GetTopicsByClusterRequestHeader(CommandHeader):
    cluster: str


# --- further admin requests (mqadmin) -------------------------------------------------------------
# The broker reads the other mqadmin headers' string fields by hand (broker/handlers/fields.py).


@header
class GetBrokerConfigResponseHeader(CommandHeader):
    version: str  # the broker's config DataVersion as JSON
