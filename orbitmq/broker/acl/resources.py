"""What every request code needs: the ACL rule table.

Each `RequestCode` has a `Rule`, learnt from RocketMQ 5's ACL 2.0 table
(the resource and action each request header declares) and expressed in
plain-ACL terms, which know topics and groups with DENY, PUB and SUB and
admin accounts:

* ACL 2.0 PUB on a topic -> PUB; SUB on a topic or group -> SUB;
* GET (read-only metadata: offsets, stats, connections) on a topic or
  group -> ANY (PUB or SUB); message contents are never "metadata": reading
  one by id or key needs SUB on the topic the stored message is in;
* UPDATE of a group's offsets (reset, clone) -> SUB on every group and
  topic named; a request that names no topic rewrites all of them and
  needs an admin account;
* CREATE, DELETE, and UPDATE or GET of the cluster (broker and NameServer
  configuration, ACL files, KV config, registrations, deleting files) ->
  admin account;
* cluster-wide read-only requests (runtime info, topic and group lists) ->
  any authenticated account, as RocketMQ 4.x has it.

A group `g` is checked as its retry topic `%RETRY%g` (RocketMQ 4.x keys
group permissions that way). Checks that need the stored message (`stored`)
are made by the validator with the broker's `StoredMessages`. Codes that a
server never serves (broker-to-client requests) are admin-only, so a code
without an explicit rule is never open; `rule_for` answers the same for a
code that is not in `RequestCode` at all.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.permission import ANY, PUB, SUB
from orbitmq.common.jsonbody import loads
from orbitmq.common.names import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.headers import send_topic

Needed = list[tuple[str, int]]
NeedsFn = Callable[[RemotingCommand], Needed]


class Stored(enum.Enum):
    """Checks made against the stored message a request names."""

    NONE = "none"
    #: VIEW_MESSAGE_BY_ID: after reading, SUB on the topic of the record returned.
    VIEW = "view"
    #: QUERY_MESSAGE: after reading, records of topics the account may not read are left out.
    QUERY = "query"
    #: CONSUMER_SEND_MSG_BACK: the message at `offset` is one the group subscribes to and the account may read.
    SEND_BACK = "send-back"
    #: END_TRANSACTION: PUB on the real topic of the half message at `commitLogOffset`.
    END_TRANSACTION = "end-transaction"
    #: CONSUME_MESSAGE_DIRECTLY: SUB on the topic of the message `msgId` names.
    BY_MSG_ID = "msg-id"


class Served(enum.Enum):
    BROKER = "broker"
    NAMESRV = "namesrv"
    #: Requests a server sends to a client; a server that receives one answers it as admin-only.
    CLIENT = "client"


def _nothing(request: RemotingCommand) -> Needed:
    return []


@dataclass(frozen=True)
class Rule:
    """One code's rule. `acl2` is RocketMQ 5's resource:action, kept for reading and tests."""

    served: Served
    acl2: str
    admin: bool = False
    needs: NeedsFn = _nothing
    stored: Stored = Stored.NONE


def group_resource(name: str | None) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + (name or "")


def _field(request: RemotingCommand, name: str) -> str | None:
    value = (request.ext_fields or {}).get(name)
    return value if value else None


def _topic(name: str, perm: int, *, required: bool = True) -> NeedsFn:
    def needs(request: RemotingCommand) -> Needed:
        value = _field(request, name)
        if value is None and not required:
            return []
        return [(value or "", perm)]

    return needs


def _group(name: str, perm: int, *, required: bool = True, split: bool = False) -> NeedsFn:
    def needs(request: RemotingCommand) -> Needed:
        value = _field(request, name)
        if value is None:
            return [] if not required else [(group_resource(""), perm)]
        names = [v.strip() for v in value.split(",") if v.strip()] if split else [value]
        return [(group_resource(n), perm) for n in names]

    return needs


def _all(*parts: NeedsFn) -> NeedsFn:
    def needs(request: RemotingCommand) -> Needed:
        out: Needed = []
        for part in parts:
            out.extend(part(request))
        return out

    return needs


def _send(request: RemotingCommand) -> Needed:
    topic = send_topic(request.ext_fields)  # the topic the send handler reads, in either key form
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        # A consumer sending a message back to its group's retry topic: a SUB right on the group.
        return [(topic, SUB)]
    return [(topic, PUB)]


def _body(request: RemotingCommand, what: str) -> dict[str, object]:
    if request.body is None:
        return {}
    try:
        data = loads(request.body_bytes())
    except Exception as exc:  # noqa: BLE001 - any parse failure is an ACL refusal, not a crash
        raise AclError(f"{what} body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise AclError(f"{what} body is not a JSON object")
    return data


def _list(value: object, name: str) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclError(f"heartbeat body: {name} is not a list")
    return value


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _heartbeat(request: RemotingCommand) -> Needed:
    data = _body(request, "heartbeat")
    needed: Needed = []
    for consumer in _list(data.get("consumerDataSet"), "consumerDataSet"):
        if not isinstance(consumer, dict):
            raise AclError("heartbeat body: consumerDataSet holds a non-object")
        needed.append((group_resource(_text(consumer.get("groupName"))), SUB))
        for sub in _list(consumer.get("subscriptionDataSet"), "subscriptionDataSet"):
            if not isinstance(sub, dict):
                raise AclError("heartbeat body: subscriptionDataSet holds a non-object")
            needed.append((_text(sub.get("topic")), SUB))
    return needed


def _lock_batch(request: RemotingCommand) -> Needed:
    data = _body(request, "lock batch")
    needed: Needed = [(group_resource(_text(data.get("consumerGroup"))), SUB)]
    for mq in _list(data.get("mqSet"), "mqSet"):
        if not isinstance(mq, dict):
            raise AclError("lock batch body: mqSet holds a non-object")
        needed.append((_text(mq.get("topic")), SUB))
    return needed


def _check_client_config(request: RemotingCommand) -> Needed:
    data = _body(request, "check client config")
    needed: Needed = [(group_resource(_text(data.get("group"))), SUB)]
    subscription = data.get("subscriptionData")
    if isinstance(subscription, dict) and subscription.get("topic"):
        needed.append((_text(subscription.get("topic")), SUB))
    return needed


def _unregister(request: RemotingCommand) -> Needed:
    # A producer leaving names no consumer group: nothing to check beyond the signature.
    group = _field(request, "consumerGroup")
    return [(group_resource(group), SUB)] if group else []


def _pop_topic(request: RemotingCommand) -> Needed:
    """ACK_MESSAGE / CHANGE_MESSAGE_INVISIBLETIME name the real topic: a POP retry topic
    (`%RETRY%{group}_{topic}` or `+{topic}`) of the request's own group is checked as its topic."""
    topic = _field(request, "topic") or ""
    group = _field(request, "consumerGroup") or ""
    prefix = RETRY_GROUP_TOPIC_PREFIX + group
    if group and topic.startswith(prefix) and topic[len(prefix):len(prefix) + 1] in ("_", "+"):
        topic = topic[len(prefix) + 1:]
    return [(topic, SUB)]


def _batch_ack(request: RemotingCommand) -> Needed:
    """BATCH_ACK_MESSAGE: SUB on the original topic (`t`) and the group (`c`) of every entry."""
    body = _body(request, "batch ack")
    out: Needed = []
    for entry in _list(body.get("acks"), "acks"):
        if not isinstance(entry, dict):
            raise AclError("batch ack body: acks holds a non-object")
        out.append((_text(entry.get("t")), SUB))
        out.append((group_resource(_text(entry.get("c"))), SUB))
    return out or [(group_resource(""), SUB)]  # an empty batch still needs a group right


def _clone_offsets(request: RemotingCommand) -> Needed:
    if _field(request, "topic") is None:
        raise NeedsAdmin("CLONE_GROUP_OFFSET without a topic rewrites every topic of the group: it needs an admin account")
    return _all(_group("srcGroup", SUB), _group("destGroup", SUB), _topic("topic", SUB))(request)


class NeedsAdmin(AclError):
    """Raised by a rule when this form of the request is for admin accounts only."""

    def __init__(self, message: str) -> None:
        super().__init__(message, no_permission=True)


def _broker(acl2: str, needs: NeedsFn = _nothing, stored: Stored = Stored.NONE) -> Rule:
    return Rule(Served.BROKER, acl2, needs=needs, stored=stored)


def _admin(acl2: str, served: Served = Served.BROKER) -> Rule:
    return Rule(served, acl2, admin=True)


def _namesrv_read(acl2: str) -> Rule:
    return Rule(Served.NAMESRV, acl2)


_C = RequestCode
_OFFSETS = _all(_group("consumerGroup", SUB), _topic("topic", SUB))
_RESET = _all(_group("group", SUB), _topic("topic", SUB))

#: Every RequestCode's rule (tests/acl/test_rule_table.py fails when a code has none).
RULES: dict[int, Rule] = {
    # --- producers -------------------------------------------------------------------------------
    _C.SEND_MESSAGE: _broker("Topic:PUB", _send),
    _C.SEND_MESSAGE_V2: _broker("Topic:PUB", _send),
    _C.SEND_BATCH_MESSAGE: _broker("Topic:PUB", _send),
    _C.SEND_REPLY_MESSAGE: _broker("Topic:PUB", _send),
    _C.SEND_REPLY_MESSAGE_V2: _broker("Topic:PUB", _send),
    _C.END_TRANSACTION: _broker("Topic:PUB", _topic("topic", PUB, required=False), Stored.END_TRANSACTION),
    # A recall stores a delete marker in the topic: the same right as a send.
    _C.RECALL_MESSAGE: _broker("Topic:PUB", _topic("topic", PUB)),
    _C.HEART_BEAT: _broker("Group:PUB,SUB", _heartbeat),
    _C.UNREGISTER_CLIENT: _broker("Group:PUB,SUB", _unregister),
    _C.CHECK_CLIENT_CONFIG: _broker("Group:SUB", _check_client_config),
    # --- consumers -------------------------------------------------------------------------------
    _C.PULL_MESSAGE: _broker("Topic,Group:SUB", _all(_topic("topic", SUB), _group("consumerGroup", SUB))),
    _C.QUERY_MESSAGE: _broker("Topic:SUB,GET", _topic("topic", SUB), Stored.QUERY),
    _C.QUERY_CONSUMER_OFFSET: _broker("Topic,Group:GET", _OFFSETS),
    _C.UPDATE_CONSUMER_OFFSET: _broker("Topic,Group:SUB", _OFFSETS),
    _C.SEARCH_OFFSET_BY_TIMESTAMP: _broker("Topic:GET", _topic("topic", ANY)),
    _C.GET_MAX_OFFSET: _broker("Topic:GET", _topic("topic", ANY)),
    _C.GET_MIN_OFFSET: _broker("Topic:GET", _topic("topic", ANY)),
    _C.GET_EARLIEST_MSG_STORETIME: _broker("Topic:GET", _topic("topic", ANY)),
    _C.VIEW_MESSAGE_BY_ID: _broker("Topic:GET", _topic("topic", SUB, required=False), Stored.VIEW),
    _C.CONSUMER_SEND_MSG_BACK: _broker("Topic,Group:SUB", _group("group", SUB), Stored.SEND_BACK),
    _C.GET_CONSUMER_LIST_BY_GROUP: _broker("Group:SUB,GET", _group("consumerGroup", SUB)),
    _C.LOCK_BATCH_MQ: _broker("Topic,Group:SUB", _lock_batch),
    _C.UNLOCK_BATCH_MQ: _broker("Topic,Group:SUB", _lock_batch),
    # --- RocketMQ 5 POP consumption (ACL 2.0: SUB on topic and group; POLLING_INFO is a GET) --------
    _C.POP_MESSAGE: _broker("Topic,Group:SUB", _all(_topic("topic", SUB), _group("consumerGroup", SUB))),
    _C.PEEK_MESSAGE: _broker("Topic,Group:SUB", _all(_topic("topic", SUB), _group("consumerGroup", SUB))),
    _C.NOTIFICATION: _broker("Topic,Group:SUB", _all(_topic("topic", SUB), _group("consumerGroup", SUB))),
    _C.POLLING_INFO: _broker("Topic,Group:GET", _all(_topic("topic", ANY), _group("consumerGroup", ANY))),
    _C.ACK_MESSAGE: _broker("Topic,Group:SUB", _all(_pop_topic, _group("consumerGroup", SUB))),
    _C.CHANGE_MESSAGE_INVISIBLETIME: _broker("Topic,Group:SUB", _all(_pop_topic, _group("consumerGroup", SUB))),
    _C.BATCH_ACK_MESSAGE: _broker("Topic,Group:SUB", _batch_ack),
    # --- NameServer: reads are open, writes need an admin account ----------------------------
    _C.PUT_KV_CONFIG: _admin("Cluster:UPDATE", Served.NAMESRV),
    _C.GET_KV_CONFIG: _namesrv_read("Cluster:GET"),
    _C.DELETE_KV_CONFIG: _admin("Cluster:UPDATE", Served.NAMESRV),
    _C.GET_ROUTEINFO_BY_TOPIC: _namesrv_read("Cluster:GET"),
    _C.GET_BROKER_CLUSTER_INFO: _namesrv_read("Cluster:GET"),
    _C.WIPE_WRITE_PERM_OF_BROKER: _admin("Cluster:UPDATE", Served.NAMESRV),
    _C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: _namesrv_read("Topic:LIST"),
    _C.DELETE_TOPIC_IN_NAMESRV: _admin("Cluster:UPDATE", Served.NAMESRV),
    _C.GET_KVLIST_BY_NAMESPACE: _namesrv_read("Cluster:GET"),
    _C.GET_TOPICS_BY_CLUSTER: _namesrv_read("Topic:LIST"),
    _C.GET_SYSTEM_TOPIC_LIST_FROM_NS: _namesrv_read("Topic:LIST"),
    _C.GET_UNIT_TOPIC_LIST: _namesrv_read("Topic:LIST"),
    _C.GET_HAS_UNIT_SUB_TOPIC_LIST: _namesrv_read("Topic:LIST"),
    _C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: _namesrv_read("Topic:LIST"),
    _C.UPDATE_NAMESRV_CONFIG: _admin("Cluster:UPDATE", Served.NAMESRV),
    _C.GET_NAMESRV_CONFIG: _namesrv_read("Cluster:GET"),
    _C.ADD_WRITE_PERM_OF_BROKER: _admin("Cluster:UPDATE", Served.NAMESRV),
    _C.REGISTER_BROKER: _admin("Cluster:UPDATE", Served.NAMESRV),
    _C.UNREGISTER_BROKER: _admin("Cluster:UPDATE", Served.NAMESRV),
    _C.QUERY_DATA_VERSION: _namesrv_read("Cluster:GET"),
    # --- admin tools and slaves -> broker ----------------------------------------------------------
    _C.QUERY_BROKER_OFFSET: _broker("Cluster:GET"),
    _C.UPDATE_AND_CREATE_TOPIC: _admin("Topic:CREATE"),
    _C.LIST_TIMER_MESSAGES: _broker("Topic:GET", _topic("topic", SUB)),
    _C.CANCEL_TIMER_MESSAGE: _broker("Topic:PUB", _topic("topic", PUB)),
    _C.RESCHEDULE_TIMER_MESSAGE: _broker("Topic:PUB", _topic("topic", PUB)),
    _C.GET_ALL_TOPIC_CONFIG: _broker("Topic:LIST"),
    _C.GET_TOPIC_CONFIG_LIST: _broker("Topic:LIST"),
    _C.GET_TOPIC_NAME_LIST: _broker("Topic:LIST"),
    _C.UPDATE_BROKER_CONFIG: _admin("Cluster:UPDATE"),
    # The broker's configuration may hold its own secrets (haSecret, aclSecretKey).
    _C.GET_BROKER_CONFIG: _admin("Cluster:GET"),
    _C.TRIGGER_DELETE_FILES: _admin("Cluster:UPDATE"),
    _C.GET_BROKER_RUNTIME_INFO: _broker("Cluster:GET"),
    _C.GET_ALL_CONSUMER_OFFSET: _broker("Group:LIST"),
    _C.GET_ALL_DELAY_OFFSET: _broker("Cluster:GET"),
    _C.UPDATE_AND_CREATE_ACL_CONFIG: _admin("Cluster:UPDATE"),
    _C.DELETE_ACL_CONFIG: _admin("Cluster:UPDATE"),
    _C.GET_BROKER_CLUSTER_ACL_INFO: _broker("Cluster:GET"),
    _C.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: _admin("Cluster:UPDATE"),
    # Its answer holds every account's secret key.
    _C.GET_BROKER_CLUSTER_ACL_CONFIG: _admin("Cluster:GET"),
    _C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: _admin("Group:CREATE"),
    _C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: _broker("Group:LIST"),
    _C.GET_TOPIC_STATS_INFO: _broker("Topic:GET", _topic("topic", ANY)),
    _C.GET_CONSUMER_CONNECTION_LIST: _broker("Group:GET", _group("consumerGroup", ANY)),
    _C.GET_PRODUCER_CONNECTION_LIST: _broker("Cluster:GET"),
    _C.DELETE_SUBSCRIPTIONGROUP: _admin("Group:DELETE"),
    _C.GET_CONSUME_STATS: _broker(
        "Topic,Group:GET", _all(_group("consumerGroup", ANY), _topic("topic", ANY, required=False))
    ),
    _C.SUSPEND_CONSUMER: _admin("Group:UPDATE"),
    _C.RESUME_CONSUMER: _admin("Group:UPDATE"),
    _C.RESET_CONSUMER_OFFSET_IN_CONSUMER: _broker("Topic,Group:UPDATE", _RESET),
    _C.RESET_CONSUMER_OFFSET_IN_BROKER: _broker("Topic,Group:UPDATE", _RESET),
    _C.ADJUST_CONSUMER_THREAD_POOL: _admin("Group:UPDATE"),
    _C.WHO_CONSUME_THE_MESSAGE: _broker("Topic:GET", _topic("topic", ANY, required=False)),
    _C.DELETE_TOPIC_IN_BROKER: _admin("Topic:DELETE"),
    _C.INVOKE_BROKER_TO_RESET_OFFSET: _broker("Topic,Group:UPDATE", _RESET),
    _C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: _broker(
        "Topic,Group:GET", _all(_group("group", ANY), _topic("topic", ANY))
    ),
    _C.QUERY_TOPIC_CONSUME_BY_WHO: _broker("Topic:GET", _topic("topic", ANY)),
    _C.REGISTER_FILTER_SERVER: _admin("Cluster:UPDATE"),
    _C.REGISTER_MESSAGE_FILTER_CLASS: _admin("Cluster:UPDATE"),
    _C.QUERY_CONSUME_TIME_SPAN: _broker("Topic,Group:GET", _all(_group("group", ANY), _topic("topic", ANY))),
    _C.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: _broker("Topic:LIST"),
    _C.CLEAN_EXPIRED_CONSUMEQUEUE: _admin("Cluster:UPDATE"),
    _C.GET_CONSUMER_RUNNING_INFO: _broker("Group:GET", _group("consumerGroup", ANY)),
    _C.QUERY_CORRECTION_OFFSET: _broker(
        "Topic,Group:GET",
        _all(_group("filterGroups", ANY, required=False, split=True), _group("compareGroup", ANY),
             _topic("topic", ANY)),
    ),
    _C.CONSUME_MESSAGE_DIRECTLY: _broker("Topic,Group:SUB", _group("consumerGroup", SUB), Stored.BY_MSG_ID),
    _C.CLONE_GROUP_OFFSET: _broker("Topic,Group:UPDATE", _clone_offsets),
    _C.VIEW_BROKER_STATS_DATA: _broker("Cluster:GET"),
    _C.CLEAN_UNUSED_TOPIC: _admin("Cluster:UPDATE"),
    _C.GET_BROKER_CONSUME_STATS: _broker("Cluster:GET"),
    _C.QUERY_CONSUME_QUEUE: _broker("Topic,Group:GET", _all(_topic("topic", ANY), _group("consumerGroup", ANY,
                                                                                         required=False))),
    _C.RESUME_CHECK_HALF_MESSAGE: _admin("Topic:UPDATE"),
    _C.GET_ALL_PRODUCER_INFO: _broker("Cluster:GET"),
    _C.DELETE_EXPIRED_COMMITLOG: _admin("Cluster:UPDATE"),
    # --- broker -> client: no server serves these ----------------------------------------------------
    _C.CHECK_TRANSACTION_STATE: _admin("Topic:PUB", Served.CLIENT),
    _C.NOTIFY_CONSUMER_IDS_CHANGED: _admin("Group:SUB", Served.CLIENT),
    _C.RESET_CONSUMER_CLIENT_OFFSET: _admin("Group:UPDATE", Served.CLIENT),
    _C.GET_CONSUMER_STATUS_FROM_CLIENT: _admin("Group:GET", Served.CLIENT),
    _C.PUSH_REPLY_MESSAGE_TO_CLIENT: _admin("Topic:SUB", Served.CLIENT),
}

#: What a code without a rule gets: an admin account (never open by omission).
UNKNOWN = Rule(Served.BROKER, "unknown", admin=True)


def rule_for(code: int) -> Rule:
    return RULES.get(code, UNKNOWN)


def needed_resources(request: RemotingCommand) -> Needed:
    """(resource, permission) pairs `request` needs before its handler runs; raises `AclError`
    for a body the rule must read and cannot."""
    return rule_for(request.code).needs(request)


#: Codes RocketMQ 4.x's plain ACL checks itself: their refusals keep its answer (SYSTEM_ERROR);
#: every other refusal is NO_PERMISSION, RocketMQ 5's answer.
LEGACY_CHECKED: frozenset[int] = frozenset({
    _C.SEND_MESSAGE, _C.SEND_MESSAGE_V2, _C.SEND_BATCH_MESSAGE, _C.SEND_REPLY_MESSAGE, _C.SEND_REPLY_MESSAGE_V2,
    _C.PULL_MESSAGE, _C.QUERY_MESSAGE, _C.HEART_BEAT, _C.UNREGISTER_CLIENT, _C.GET_CONSUMER_LIST_BY_GROUP,
    _C.UPDATE_CONSUMER_OFFSET, _C.QUERY_CONSUMER_OFFSET, _C.CONSUMER_SEND_MSG_BACK,
    _C.UPDATE_AND_CREATE_TOPIC, _C.UPDATE_BROKER_CONFIG, _C.DELETE_TOPIC_IN_BROKER,
    _C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, _C.DELETE_SUBSCRIPTIONGROUP, _C.UPDATE_AND_CREATE_ACL_CONFIG,
    _C.DELETE_ACL_CONFIG, _C.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, _C.GET_BROKER_CLUSTER_ACL_CONFIG,
})
