"""Requests the broker sends to a Java 4.9.x client, read as ClientRemotingProcessor reads them.

CHECK_TRANSACTION_STATE (header @CFNotNull fields, the half message decoded
with MessageDecoder.decode, its PGROUP and UNIQ_KEY) answered with the oneway
END_TRANSACTION DefaultMQProducerImpl.processTransactionCheck sends;
RESET_CONSUMER_CLIENT_OFFSET (ResetOffsetBody keyed by MessageQueue objects)
after mqadmin resetOffsetByTime; PUSH_REPLY_MESSAGE_TO_CLIENT
(ReplyMessageRequestHeader) after a reply sent with SEND_REPLY_MESSAGE_V2;
GET_CONSUMER_STATUS_FROM_CLIENT for mqadmin getConsumerStatus.
"""

from __future__ import annotations

import json
import time

from tests.conformance.test_admin_tools import fastjson_loads_object_keys
from tests.conformance.wire import (
    Conn,
    Reply,
    decode_properties,
    decode_records,
    encode_properties,
    go_reset_offsets,
    java_frame,
    java_response,
)
from tests.support.dev import DevServer

PULL_MESSAGE = 11
UPDATE_CONSUMER_OFFSET = 15
HEART_BEAT = 34
END_TRANSACTION = 37
CHECK_TRANSACTION_STATE = 39
RESET_CONSUMER_CLIENT_OFFSET = 220
GET_CONSUMER_STATUS_FROM_CLIENT = 221
INVOKE_BROKER_TO_RESET_OFFSET = 222
INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
SEND_MESSAGE_V2 = 310
SEND_REPLY_MESSAGE_V2 = 325
PUSH_REPLY_MESSAGE_TO_CLIENT = 326
GET_MAX_OFFSET = 30

TRANSACTION_PREPARED_TYPE = 1 << 2
TRANSACTION_NOT_TYPE = 0
TRANSACTION_COMMIT_TYPE = 2 << 2


def heartbeat(conn: Conn, client_id: str, producer: str | None = None, consumer: tuple[str, str] | None = None) -> None:
    consumers = []
    if consumer is not None:
        group, topic = consumer
        consumers.append({"groupName": group, "consumeType": "CONSUME_PASSIVELY", "messageModel": "CLUSTERING",
                          "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "unitMode": False,
                          "subscriptionDataSet": [{"classFilterMode": False, "codeSet": [], "expressionType": "TAG",
                                                   "subString": "*", "subVersion": 1, "tagsSet": [],
                                                   "topic": topic}]})
    body = {"clientID": client_id, "producerDataSet": [{"groupName": producer}] if producer else [],
            "consumerDataSet": consumers}
    assert conn.java(HEART_BEAT, None, json.dumps(body).encode()).code == 0


def v2(topic: str, props: dict[str, str], group: str, sys_flag: int = 0, queue_id: int = 0) -> dict[str, str]:
    return {"a": group, "b": topic, "c": "TBW102", "d": "4", "e": str(queue_id), "f": str(sys_flag),
            "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties(props), "j": "0", "k": "false",
            "m": "false"}


def next_request(conn: Conn, code: int, timeout: float = 10.0) -> Reply:
    for i, waiting in enumerate(conn.unsolicited):
        if waiting.code == code and not waiting.flag & 1:
            return conn.unsolicited.pop(i)
    conn.sock.settimeout(timeout)
    while True:
        request = conn.read()
        if request.code == code and not request.flag & 1:
            return request
        conn.unsolicited.append(request)


def test_an_unknown_local_transaction_is_checked_and_the_check_answer_commits_it(dev: DevServer) -> None:
    topic, group = "ConfTx", "PG_tx"
    with Conn(dev.broker) as producer:
        heartbeat(producer, "127.0.0.1@8008#8", producer=group)
        props = {"UNIQ_KEY": "TX00000000000000000000000001", "TRAN_MSG": "true", "PGROUP": group, "WAIT": "true"}
        sent = producer.java(SEND_MESSAGE_V2, v2(topic, props, group, TRANSACTION_PREPARED_TYPE), b"tx body")
        assert sent.code == 0, sent.remark
        offset_id = bytes.fromhex(sent.ext["msgId"])
        # endTransaction for LocalTransactionState.UNKNOW: TRANSACTION_NOT_TYPE, oneway.
        producer.java_oneway(END_TRANSACTION, {
            "producerGroup": group, "tranStateTableOffset": sent.ext["queueOffset"],
            "commitLogOffset": str(int.from_bytes(offset_id[8:], "big")), "commitOrRollback": str(TRANSACTION_NOT_TYPE),
            "fromTransactionCheck": "false", "msgId": props["UNIQ_KEY"]})
        check = next_request(producer, CHECK_TRANSACTION_STATE)
        tran_state_offset = int(check.ext["tranStateTableOffset"])
        commit_log_offset = int(check.ext["commitLogOffset"])
        (half,) = decode_records(check.body)
        assert half.properties["PGROUP"] == group, "checkTransactionState finds the producer by PGROUP"
        assert half.properties["UNIQ_KEY"] == props["UNIQ_KEY"]
        assert half.topic == topic and half.body == b"tx body"
        if "transactionId" in check.ext:
            assert check.ext["transactionId"] == props["UNIQ_KEY"]
        producer.java_oneway(END_TRANSACTION, {
            "producerGroup": group, "tranStateTableOffset": str(tran_state_offset),
            "commitLogOffset": str(commit_log_offset), "commitOrRollback": str(TRANSACTION_COMMIT_TYPE),
            "fromTransactionCheck": "true", "msgId": props["UNIQ_KEY"],
            "transactionId": check.ext.get("transactionId", props["UNIQ_KEY"])})
        deadline = time.monotonic() + 10
        while producer.java(GET_MAX_OFFSET, {"topic": topic, "queueId": str(half.queue_id)}).ext["offset"] == "0":
            assert time.monotonic() < deadline, "the committed message never reached its topic"
            time.sleep(0.05)
        pulled = producer.java(PULL_MESSAGE, {
            "consumerGroup": "CG_tx", "topic": topic, "queueId": str(half.queue_id), "queueOffset": "0",
            "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
            "subscription": "*", "subVersion": "0", "expressionType": "TAG"})
    (committed,) = decode_records(pulled.body)
    assert committed.body == b"tx body" and committed.properties["UNIQ_KEY"] == props["UNIQ_KEY"]
    assert committed.sys_flag & (3 << 2) == TRANSACTION_COMMIT_TYPE


def test_reset_offset_by_time_reaches_the_client_with_an_object_keyed_body(dev: DevServer) -> None:
    topic, group = "ConfReset", "CG_reset"
    with Conn(dev.broker) as client:
        for i in range(3):
            assert client.java(SEND_MESSAGE_V2, v2(topic, {"UNIQ_KEY": f"R{i}"}, "PG"), b"r").code == 0
        heartbeat(client, "127.0.0.1@9009#9", consumer=(group, topic))
        client.java(UPDATE_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": "0",
                                             "commitOffset": "3"})
        with Conn(dev.broker) as admin:
            # resetOffsetByTimestamp(topic, group, 0, isForce=true): back to the first message.
            answer = admin.java(INVOKE_BROKER_TO_RESET_OFFSET,
                                {"topic": topic, "group": group, "timestamp": "0", "isForce": "true"})
        request = next_request(client, RESET_CONSUMER_CLIENT_OFFSET)
    assert answer.code == 0, answer.remark
    assert request.ext["topic"] == topic and request.ext["group"] == group
    table = fastjson_loads_object_keys(request.body)["offsetTable"]
    offsets = {(k["topic"], k["brokerName"], k["queueId"]): v for k, v in table}
    assert offsets[(topic, "broker-a", 0)] == 0
    # A Go consumer gets the same body and reads it with its own string splitting.
    assert go_reset_offsets(request.body) == offsets
    if answer.body:
        returned = fastjson_loads_object_keys(answer.body)["offsetTable"]
        assert {k["queueId"]: v for k, v in returned}[0] == 0


def test_a_reply_is_pushed_to_the_requester_with_every_required_header_field(dev: DevServer) -> None:
    requester_id = "127.0.0.1@1010#10"
    with Conn(dev.broker) as requester, Conn(dev.broker) as responder:
        heartbeat(requester, requester_id, producer="PG_requester")
        props = {"UNIQ_KEY": "RP01", "MSG_TYPE": "reply", "CORRELATION_ID": "corr-1",
                 "REPLY_TO_CLIENT": requester_id, "TTL": "3000", "CLUSTER": "DefaultCluster"}
        reply_topic = "DefaultCluster_REPLY_TOPIC"
        # The broker waits for the requester's answer before it answers the responder.
        responder.opaque += 1
        responder.sock.sendall(java_frame(SEND_REPLY_MESSAGE_V2, v2(reply_topic, props, "PG_responder"),
                                          b"the answer", responder.opaque))
        push = next_request(requester, PUSH_REPLY_MESSAGE_TO_CLIENT)
        requester.sock.sendall(java_response(push.opaque))
        sent = responder.reply_to(responder.opaque)
        assert sent.code == 0, sent.remark
    for key in ("producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
                "bornTimestamp", "flag", "bornHost", "storeHost", "storeTimestamp"):
        assert push.ext.get(key), f"ReplyMessageRequestHeader.{key} is @CFNotNull"
    for key in ("defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag", "storeTimestamp"):
        int(push.ext[key])
    for key in ("bornHost", "storeHost"):
        host, _, port = push.ext[key].rpartition(":")  # RemotingUtil.string2SocketAddress
        assert host and int(port) > 0
    assert push.ext["topic"] == reply_topic
    assert decode_properties(push.ext["properties"])["CORRELATION_ID"] == "corr-1"
    assert push.body == b"the answer"


def test_get_consumer_status_asks_the_client_and_answers_its_offsets_per_client(dev: DevServer) -> None:
    topic, group, client_id = "ConfStatus", "CG_status", "127.0.0.1@1111#11"
    with Conn(dev.broker) as client, Conn(dev.broker) as admin:
        assert client.java(SEND_MESSAGE_V2, v2(topic, {"UNIQ_KEY": "ST"}, "PG"), b"s").code == 0
        heartbeat(client, client_id, consumer=(group, topic))
        # mqadmin getConsumerStatus: INVOKE_BROKER_TO_GET_CONSUMER_STATUS with topic, group, clientAddr.
        admin.opaque += 1
        admin.sock.sendall(java_frame(INVOKE_BROKER_TO_GET_CONSUMER_STATUS,
                                      {"topic": topic, "group": group, "clientAddr": client_id}, b"", admin.opaque))
        ask = next_request(client, GET_CONSUMER_STATUS_FROM_CLIENT)
        assert ask.ext["topic"] == topic and ask.ext["group"] == group
        # What ClientRemotingProcessor.getConsumeStatus answers: GetConsumerStatusBody.messageQueueTable.
        status = b'{"messageQueueTable":{{"brokerName":"broker-a","queueId":0,"topic":"ConfStatus"}:1}}'
        client.sock.sendall(java_response(ask.opaque, body=status))
        answer = admin.reply_to(admin.opaque)
    assert answer.code == 0, answer.remark
    table = fastjson_loads_object_keys(answer.body)["consumerTable"]
    assert [(k["queueId"], v) for k, v in table[client_id]] == [(0, 1)]
