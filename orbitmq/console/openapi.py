"""The OpenAPI 3.1 document of the console's JSON API (served at /api/openapi.json).

tests/console/test_api.py calls every documented path against a running
console and validates each answer against the schema written here.
"""

from __future__ import annotations

from typing import Any

from orbitmq import __version__


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required if required is not None else list(props)}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _arr(item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item}


_S = {"type": "string"}
_I = {"type": "integer"}
_N = {"type": "number"}
_B = {"type": "boolean"}


def _page_of(item: str) -> dict[str, Any]:
    return _obj({"total": _I, "page": _I, "size": _I, "items": _arr(_ref(item))})


SCHEMAS: dict[str, Any] = {
    "Error": _obj({"error": _S, "code": {"type": ["integer", "null"]}}),
    "Session": _obj({"loginRequired": _B, "loggedIn": _B, "accessKey": _S, "admin": _B}),
    "Broker": _obj({
        "cluster": _S, "brokerName": _S, "brokerId": _I, "addr": _S, "role": {"enum": ["MASTER", "SLAVE"]},
        "runtime": {"type": "object", "additionalProperties": _S}, "error": _S,
    }),
    "Cluster": _obj({"brokers": _arr(_ref("Broker"))}),
    "TopicSummary": _obj({"topic": _S, "kind": {"enum": ["normal", "retry", "dlq", "system"]}}),
    "TopicPage": _page_of("TopicSummary"),
    "QueueOffsets": _obj({"brokerName": _S, "queueId": _I, "minOffset": _I, "maxOffset": _I,
                          "lastUpdateTimestamp": _I}),
    "Topic": _obj({
        "topic": _S,
        "brokers": _arr(_obj({"brokerName": _S, "cluster": _S, "addrs": {"type": "object",
                                                                         "additionalProperties": _S}})),
        "queueDatas": _arr(_obj({"brokerName": _S, "readQueueNums": _I, "writeQueueNums": _I, "perm": _I,
                                 "permText": _S})),
        "queues": _arr(_ref("QueueOffsets")),
        "messages": _I,
    }),
    "TopicWrite": _obj({
        "readQueueNums": {"type": "integer", "minimum": 1, "maximum": 1024},
        "writeQueueNums": {"type": "integer", "minimum": 1, "maximum": 1024},
        "perm": {"type": "integer", "minimum": 0, "maximum": 7},
        "order": _B, "cluster": _S,
    }, []),
    "TopicChanged": _obj({"topic": _S, "brokers": _arr(_S)}),
    "GroupSummary": _obj({"group": _S, "online": _I, "lag": _I, "consumeTps": _N}),
    "GroupPage": _page_of("GroupSummary"),
    "Group": _obj({
        "group": _S, "messageModel": _S,
        "clients": _arr(_obj({"clientId": _S, "clientAddr": _S, "language": _S, "version": _I})),
        "subscriptions": {"type": "object", "additionalProperties": _S},
        "queues": _arr(_obj({"topic": _S, "brokerName": _S, "queueId": _I, "brokerOffset": _I,
                             "consumerOffset": _I, "lag": _I, "lagSeconds": _N})),
        "lag": _I, "consumeTps": _N,
    }),
    "ResetOffset": _obj({"topic": _S, "timestamp": {"type": ["string", "integer"],
                                                    "description": "'now', epoch ms, or yyyy-MM-dd#HH:mm:ss:SSS"},
                         "skipBacklog": _B}, ["topic"]),
    "Offsets": _obj({"offsets": _arr(_obj({"brokerName": _S, "queueId": _I, "offset": _I}))}),
    "Message": _obj({
        "msgId": _S, "offsetMsgId": _S, "topic": _S, "tags": _S, "keys": _arr(_S), "queueId": _I,
        "queueOffset": _I, "commitLogOffset": _I, "reconsumeTimes": _I, "bornTimestamp": _I,
        "storeTimestamp": _I, "bornHost": _S, "storeHost": _S, "sysFlag": _I,
        "properties": {"type": "object", "additionalProperties": _S}, "bodySize": _I, "bodyText": _S,
        "bodyBase64": _S,
    }),
    "MessagePage": _page_of("Message"),
    "MessageList": _obj({"items": _arr(_ref("Message"))}),
    "MessageQuery": {"anyOf": [_ref("MessagePage"), _ref("MessageList")]},
    "Trace": _obj({"traceTopic": _S, "items": _arr(_obj({
        "type": {"enum": ["Pub", "SubBefore", "SubAfter", "EndTransaction"]}, "group": _S, "clientHost": _S,
        "timestamp": _I, "costMs": _I, "success": _B, "requestId": _S, "topic": _S, "storeHost": _S,
        "retryTimes": _I, "offsetMsgId": _S,
    }))}),
    "Resend": _obj({"group": _S, "clientId": _S}, ["group"]),
    "Resent": _obj({"clientId": _S, "result": {"type": "object"}}),
    "Producers": _obj({"group": _S, "items": _arr(_obj({"brokerName": _S, "clientId": _S, "clientAddr": _S,
                                                         "language": _S, "version": _I}))}),
    "DlqResend": _obj({"msgIds": _arr(_S)}, []),
    "DeadLetter": {"allOf": [_ref("Message"), _obj({"originalTopic": _S, "originalId": _S, "error": _S,
                                                    "attempts": _I, "resent": _B})]},
    "DlqPage": _page_of("DeadLetter"),
    "DlqResent": _obj({"matched": _I, "resent": _I, "skipped": _I,
                       "targets": {"type": "object", "additionalProperties": _S,
                                   "description": "original message id -> topic its copy went to"}}),
    "DlqExportLine": {"type": "object", "description": "exportDlq's JSON form of one dead letter",
                      "required": ["originalId", "originalTopic", "dlqOffsetMsgId", "properties", "resent"]},
    "Acl": _obj({"brokers": _arr(_obj({
        "brokerName": _S, "addr": _S, "accounts": _arr({"type": "object"}), "globalWhiteAddrs": _arr(_S),
        "error": _S,
    }))}),
    "Login": _obj({"accessKey": _S, "secretKey": _S}),
}


def _param(name: str, where: str, schema: dict[str, Any], required: bool = False, doc: str = "") -> dict[str, Any]:
    return {"name": name, "in": where, "required": required or where == "path", "schema": schema,
            "description": doc}


def _answer(schema: str, doc: str) -> dict[str, Any]:
    return {
        "200": {"description": doc, "content": {"application/json": {"schema": _ref(schema)}}},
        "default": {"description": "failure", "content": {"application/json": {"schema": _ref("Error")}}},
    }


def _op(op_id: str, summary: str, answer: str, params: list[dict[str, Any]] | None = None,
        body: str | None = None) -> dict[str, Any]:
    op: dict[str, Any] = {"operationId": op_id, "summary": summary, "parameters": params or [],
                          "responses": _answer(answer, summary)}
    if body:
        op["requestBody"] = {"required": True, "content": {"application/json": {"schema": _ref(body)}}}
    return op


_PAGE = [_param("page", "query", {"type": "integer", "minimum": 0}, doc="page number from 0"),
         _param("size", "query", {"type": "integer", "minimum": 1, "maximum": 100}, doc="items per page")]
_TOPIC = _param("topic", "path", _S)
_GROUP = _param("group", "path", _S)


def openapi_document() -> dict[str, Any]:
    paths: dict[str, Any] = {
        "/api/session": {"get": _op("getSession", "Who is logged in and whether login is required", "Session")},
        "/api/login": {"post": _op("login", "Log in with a plain-ACL account (sets a session cookie)", "Session",
                                   body="Login")},
        "/api/logout": {"post": _op("logout", "End the session", "Session")},
        "/api/cluster": {"get": _op("getCluster", "Brokers with role, version, disk and TPS", "Cluster")},
        "/api/topics": {"get": _op("listTopics", "Topics, paged", "TopicPage", [
            _param("q", "query", _S, doc="substring of the name"),
            _param("kind", "query", {"enum": ["", "all", "normal", "retry", "dlq", "system"]}), *_PAGE])},
        "/api/topics/{topic}": {
            "get": _op("getTopic", "Route, permissions and per-queue min/max offsets", "Topic", [_TOPIC]),
            "put": _op("putTopic", "Create the topic or change its queues and permission (updateTopic)",
                       "TopicChanged", [_TOPIC], "TopicWrite"),
            "delete": _op("deleteTopic", "Delete the topic from its brokers and the NameServers", "TopicChanged",
                          [_TOPIC]),
        },
        "/api/groups": {"get": _op("listGroups", "Subscription groups with online clients and lag, paged",
                                   "GroupPage", [_param("q", "query", _S), *_PAGE])},
        "/api/groups/{group}": {"get": _op("getGroup", "Online clients, subscriptions, lag per queue", "Group",
                                           [_GROUP])},
        "/api/groups/{group}/reset-offset": {"post": _op(
            "resetOffset", "Reset the group's offsets on a topic to a time, or skip the backlog", "Offsets",
            [_GROUP], "ResetOffset")},
        "/api/messages": {"get": _op(
            "queryMessages",
            "Messages of a topic: by message id, by key, or by store time range (paged server side)",
            "MessageQuery", [
                _param("topic", "query", _S, required=True), _param("msgId", "query", _S),
                _param("key", "query", _S), _param("begin", "query", _S, doc="start time (default 0)"),
                _param("end", "query", _S, doc="end time (default now)"), *_PAGE])},
        "/api/messages/{msgId}/trace": {"get": _op(
            "getTrace", "The message's trace from the trace topic", "Trace",
            [_param("msgId", "path", _S), _param("traceTopic", "query", _S)])},
        "/api/messages/{offsetMsgId}/resend": {"post": _op(
            "resendMessage", "Have one online client of a group consume the message again", "Resent",
            [_param("offsetMsgId", "path", _S)], "Resend")},
        "/api/producers/{group}": {"get": _op("getProducers", "The producer group's connected clients per broker",
                                              "Producers", [_GROUP])},
        "/api/dlq/{group}": {"get": _op("getDlq", "Dead letters of a group (%DLQ%group), paged", "DlqPage",
                                        [_GROUP, *_PAGE])},
        "/api/dlq/{group}/resend": {"post": _op(
            "resendDlq", "Send dead letters (the given ones, or all) once each to their original topic", "DlqResent",
            [_GROUP], "DlqResend")},
        "/api/dlq/{group}/export": {"get": {
            "operationId": "exportDlq", "summary": "Every dead letter of the group as JSON lines",
            "parameters": [_GROUP],
            "responses": {"200": {"description": "one DlqExportLine object per line (as exportDlq writes)",
                                  "content": {"application/x-ndjson": {"schema": _ref("DlqExportLine")}}}},
        }},
        "/api/acl": {"get": _op("getAcl", "Accounts (without secret keys) and global whitelists per broker",
                                "Acl")},
    }
    return {
        "openapi": "3.1.0",
        "info": {"title": "OrbitMQ console API", "version": __version__},
        "paths": paths,
        "components": {"schemas": SCHEMAS},
    }
