"""Topic and group names, system names and permission bits (protocol reference §3.9, §5.9, §6.2, §6.3).

Validation functions return RocketMQ's own remark texts, because Java tools
and tests show them to people and some match on them. Broker-side checks
(`validate_topic`, `validate_group`) use the broker's wording, answered with
code 1 SYSTEM_ERROR at every broker entry point that takes a name; client-side checks (`check_topic`, `check_group`) use the Java
client's wording and raise `MessageValidationError`.
"""

from __future__ import annotations

import re
from typing import Final

from orbitmq.errors import MessageValidationError

VALID_PATTERN_STR: Final = "^[%|a-zA-Z0-9_-]+$"
_VALID_NAME = re.compile(r"[%|a-zA-Z0-9_-]+")
TOPIC_MAX_LENGTH: Final = 127
GROUP_MAX_LENGTH: Final = 255

# --- system topics (TopicValidator / MixAll) ------------------------------------------

AUTO_CREATE_TOPIC_KEY_TOPIC: Final = "TBW102"
SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
BENCHMARK_TOPIC: Final = "BenchmarkTest"
TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"
LMQ_PREFIX: Final = "%LMQ%"
REPLY_TOPIC_POSTFIX: Final = "REPLY_TOPIC"
#: Tag of transaction op messages (their body is the half message's queue offset).
TRANS_OP_REMOVE_TAG: Final = "d"

SYSTEM_TOPICS: Final[frozenset[str]] = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC, SCHEDULE_TOPIC, BENCHMARK_TOPIC, TRANS_HALF_TOPIC, TRACE_TOPIC,
        TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC, OFFSET_MOVED_EVENT,
    }
)
#: Topics producers may not send to (16 NO_PERMISSION).
NOT_ALLOWED_SEND_TOPICS: Final[frozenset[str]] = frozenset(
    {SCHEDULE_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, TRANS_CHECK_MAX_TIME_TOPIC, SELF_TEST_TOPIC,
     OFFSET_MOVED_EVENT}
)

# --- groups and other MixAll names ---------------------------------------------------

DEFAULT_PRODUCER_GROUP: Final = "DEFAULT_PRODUCER"
DEFAULT_CONSUMER_GROUP: Final = "DEFAULT_CONSUMER"
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"
SCHEDULE_CONSUMER_GROUP: Final = "SCHEDULE_CONSUMER"
FILTERSRV_CONSUMER_GROUP: Final = "FILTERSRV_CONSUMER"
MONITOR_CONSUMER_GROUP: Final = "__MONITOR_CONSUMER"
CLIENT_INNER_PRODUCER_GROUP: Final = "CLIENT_INNER_PRODUCER"
SELF_TEST_PRODUCER_GROUP: Final = "SELF_TEST_P_GROUP"
SELF_TEST_CONSUMER_GROUP: Final = "SELF_TEST_C_GROUP"
ONS_HTTP_PROXY_GROUP: Final = "CID_ONS-HTTP-PROXY"
CID_ONSAPI_PERMISSION_GROUP: Final = "CID_ONSAPI_PERMISSION"
CID_ONSAPI_OWNER_GROUP: Final = "CID_ONSAPI_OWNER"
CID_ONSAPI_PULL_GROUP: Final = "CID_ONSAPI_PULL"
CID_RMQ_SYS_PREFIX: Final = "CID_RMQ_SYS_"
TRANS_CHECK_GROUP: Final = "CID_RMQ_SYS_TRANS"
DEFAULT_REGION: Final = "DefaultRegion"
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"
STREAM_REQUEST_TYPE_KEY: Final = "ReqT"
MASTER_ID: Final = 0
DEFAULT_CLUSTER: Final = "DefaultCluster"

SYSTEM_GROUPS: Final[frozenset[str]] = frozenset(
    {
        DEFAULT_PRODUCER_GROUP, DEFAULT_CONSUMER_GROUP, TOOLS_CONSUMER_GROUP, SCHEDULE_CONSUMER_GROUP,
        FILTERSRV_CONSUMER_GROUP, MONITOR_CONSUMER_GROUP, CLIENT_INNER_PRODUCER_GROUP,
        SELF_TEST_PRODUCER_GROUP, SELF_TEST_CONSUMER_GROUP, ONS_HTTP_PROXY_GROUP,
        CID_ONSAPI_PERMISSION_GROUP, CID_ONSAPI_OWNER_GROUP, CID_ONSAPI_PULL_GROUP,
    }
)


def is_name_legal(name: str) -> bool:
    """True when every character is one of ``%|a-zA-Z0-9_-`` (and there is at least one)."""
    return _VALID_NAME.fullmatch(name) is not None


def validate_topic(topic: str | None) -> str | None:
    """The broker's topic check: None when valid, else the remark to answer with code 1.

    Order and texts follow the 4.9.7 broker: blank, then illegal characters,
    then length.
    """
    if topic is None or not topic.strip():
        return "The specified topic is blank."
    if not is_name_legal(topic):
        return f"The specified topic contains illegal characters, allowing only {VALID_PATTERN_STR}"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def validate_group(group: str | None) -> str | None:
    """The broker's group check: None when valid, else the remark to answer with code 1.

    The same rules as topics (RocketMQ's `isTopicOrGroupIllegal`), with the
    group length limit.
    """
    if group is None or not group.strip():
        return "the specified group is blank"
    if not is_name_legal(group):
        return f"the specified group[{group}] contains illegal characters, allowing only {VALID_PATTERN_STR}"
    if len(group) > GROUP_MAX_LENGTH:
        return f"the specified group is longer than group max length {GROUP_MAX_LENGTH}."
    return None


def check_topic(topic: str | None) -> None:
    """The Java client's topic check; raises `MessageValidationError` with the client's text."""
    if topic is None or not topic.strip():
        raise MessageValidationError("The specified topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise MessageValidationError(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if not is_name_legal(topic):
        raise MessageValidationError(
            f"The specified topic[{topic}] contains illegal characters, allowing only {VALID_PATTERN_STR}"
        )


def check_group(group: str | None) -> None:
    """The Java client's group check; raises `MessageValidationError` with the client's text."""
    if group is None or not group.strip():
        raise MessageValidationError("the specified group is blank")
    if len(group) > GROUP_MAX_LENGTH:
        raise MessageValidationError(f"the specified group is longer than group max length {GROUP_MAX_LENGTH}.")
    if not is_name_legal(group):
        raise MessageValidationError(
            f"the specified group[{group}] contains illegal characters, allowing only {VALID_PATTERN_STR}"
        )


def is_system_topic(topic: str) -> bool:
    """A topic RocketMQ reserves: one of `SYSTEM_TOPICS` or any name starting with ``rmq_sys_``."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def system_topic_conflict_remark(topic: str) -> str:
    return f"The topic[{topic}] is conflict with system topic."


def is_not_allowed_send_topic(topic: str) -> bool:
    return topic in NOT_ALLOWED_SEND_TOPICS


def send_forbidden_remark(topic: str) -> str:
    """The remark of the 16 NO_PERMISSION answer to a send to a not-sendable topic."""
    return f"Sending message to topic[{topic}] is forbidden."


def is_system_group(group: str) -> bool:
    return group in SYSTEM_GROUPS or group.startswith(CID_RMQ_SYS_PREFIX)


def retry_topic(group: str) -> str:
    """``%RETRY%`` + group: where a consumer group's failed messages wait for redelivery."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``%DLQ%`` + group: where messages go after too many redeliveries."""
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_dlq_topic(topic: str) -> bool:
    return topic.startswith(DLQ_GROUP_TOPIC_PREFIX)


def group_of_retry_or_dlq_topic(topic: str) -> str | None:
    """The consumer group a ``%RETRY%``/``%DLQ%`` topic belongs to, or None for other topics."""
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if topic.startswith(prefix):
            return topic[len(prefix) :]
    return None


def reply_topic(cluster_name: str) -> str:
    return f"{cluster_name}_{REPLY_TOPIC_POSTFIX}"


def is_lmq(topic: str) -> bool:
    return topic.startswith(LMQ_PREFIX)


# --- permissions (PermName) -------------------------------------------------------------

PERM_PRIORITY: Final = 0x8
PERM_READ: Final = 0x4
PERM_WRITE: Final = 0x2
PERM_INHERIT: Final = 0x1
DEFAULT_PERM: Final = PERM_READ | PERM_WRITE


def is_readable(perm: int) -> bool:
    return perm & PERM_READ == PERM_READ


def is_writeable(perm: int) -> bool:
    return perm & PERM_WRITE == PERM_WRITE


def is_inherited(perm: int) -> bool:
    return perm & PERM_INHERIT == PERM_INHERIT


def perm_to_string(perm: int) -> str:
    """The three-letter form tools show: R, W and X (inherit) or ``-`` each, e.g. 6 → ``RW-``."""
    return (
        ("R" if is_readable(perm) else "-")
        + ("W" if is_writeable(perm) else "-")
        + ("X" if is_inherited(perm) else "-")
    )


# --- topic sysflag (TopicSysFlag) ---------------------------------------------------

TOPIC_FLAG_UNIT: Final = 0x1
TOPIC_FLAG_UNIT_SUB: Final = 0x2
