"""Which topics and groups a request touches, and the permission each needs.

Follows RocketMQ 4.9's plain validator, and goes further where it leaves a
way around the check: batch and reply sends need PUB on their topic like
single sends, and QUERY_CONSUMER_OFFSET needs SUB like UPDATE_CONSUMER_OFFSET.
A group `g` is checked as its retry topic `%RETRY%g`.
"""

from __future__ import annotations

from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.permission import PUB, SUB
from orbitmq.common.jsonbody import loads
from orbitmq.common.names import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand

Needed = list[tuple[str, int]]

_SEND_PLAIN = frozenset({RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE})
_SEND_V2 = frozenset({RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE, RequestCode.SEND_REPLY_MESSAGE_V2})


def _group(name: str | None) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + (name or "")


def _send(topic: str | None) -> Needed:
    topic = topic or ""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        # A consumer sending a message back to its group's retry topic: a SUB right on the group.
        return [(topic, SUB)]
    return [(topic, PUB)]


def _heartbeat(request: RemotingCommand) -> Needed:
    if request.body is None:
        return []
    try:
        data = loads(request.body_bytes())
    except Exception as exc:  # noqa: BLE001 - any parse failure is an ACL refusal, not a crash
        raise AclError(f"heartbeat body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise AclError("heartbeat body is not a JSON object")
    needed: Needed = []
    for consumer in _list(data.get("consumerDataSet"), "consumerDataSet"):
        if not isinstance(consumer, dict):
            raise AclError("heartbeat body: consumerDataSet holds a non-object")
        needed.append((_group(_text(consumer.get("groupName"))), SUB))
        for sub in _list(consumer.get("subscriptionDataSet"), "subscriptionDataSet"):
            if not isinstance(sub, dict):
                raise AclError("heartbeat body: subscriptionDataSet holds a non-object")
            needed.append((_text(sub.get("topic")), SUB))
    return needed


def _list(value: object, name: str) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AclError(f"heartbeat body: {name} is not a list")
    return value


def _text(value: object) -> str:
    return "" if value is None else str(value)


def needed_resources(request: RemotingCommand) -> Needed:
    """(resource, permission) pairs `request` needs; raises `AclError` for an unreadable heartbeat."""
    fields = request.ext_fields or {}
    code = request.code
    if code in _SEND_PLAIN:
        return _send(fields.get("topic"))
    if code in _SEND_V2:
        return _send(fields.get("b"))
    if code == RequestCode.PULL_MESSAGE:
        return [(fields.get("topic") or "", SUB), (_group(fields.get("consumerGroup")), SUB)]
    if code == RequestCode.CONSUMER_SEND_MSG_BACK:
        return [(_group(fields.get("group")), SUB)]
    if code == RequestCode.QUERY_MESSAGE:
        return [(fields.get("topic") or "", SUB)]
    if code in (RequestCode.UPDATE_CONSUMER_OFFSET, RequestCode.QUERY_CONSUMER_OFFSET):
        return [(_group(fields.get("consumerGroup")), SUB), (fields.get("topic") or "", SUB)]
    if code in (RequestCode.UNREGISTER_CLIENT, RequestCode.GET_CONSUMER_LIST_BY_GROUP):
        group = fields.get("consumerGroup")
        # A producer leaving names no consumer group: nothing to check beyond the signature.
        return [(_group(group), SUB)] if group else []
    if code == RequestCode.HEART_BEAT:
        return _heartbeat(request)
    return []
