"""Decoding the bodies Java RocketMQ peers send (fastjson quirks included), without sockets."""

from __future__ import annotations

import pytest

from orbitmq.admin import wire
from orbitmq.admin.models import ClusterInfo, ConsumerConnection, TopicRouteData
from orbitmq.client.queue import MessageQueue
from orbitmq.common.message import MessageExt
from orbitmq.common.record import encode_record
from orbitmq.errors import BrokerError

LEGACY_ROUTE = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-b",'
    b'"cluster":"C"},{"brokerAddrs":{1:"10.0.0.3:10911"},"brokerName":"broker-a","cluster":"C"}],'
    b'"filterServerTable":{},"queueDatas":[{"brokerName":"broker-b","perm":6,"readQueueNums":2,'
    b'"topicSysFlag":0,"writeQueueNums":3},{"brokerName":"broker-a","perm":6,"readQueueNums":1,'
    b'"topicSysFlag":0,"writeQueueNums":1}]}'
)


def test_route_with_bare_numeric_keys_yields_masters_and_queues() -> None:
    route = TopicRouteData.from_json(wire.json_object(LEGACY_ROUTE)).sorted()
    assert [b.broker_name for b in route.broker_datas] == ["broker-a", "broker-b"]
    # broker-a has only a slave: no master, so no queue to write to.
    assert route.master_addrs() == {"broker-b": "10.0.0.1:10911"}
    assert route.write_queues("T") == [MessageQueue("T", "broker-b", i) for i in range(3)]
    assert MessageQueue("T", "broker-a", 0) in route.read_queues("T")
    assert route.to_json()["brokerDatas"][1]["brokerAddrs"] == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}


def test_cluster_info_lists_masters_per_cluster() -> None:
    body = (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )
    info = ClusterInfo.from_json(wire.json_object(body))
    assert info.master_addrs("DefaultCluster") == {"broker-a": "127.0.0.1:10911"}
    assert info.master_addrs("Other") == {}


def test_object_keyed_stats_map_decodes_to_message_queues() -> None:
    body = (
        b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:'
        b'{"brokerOffset":10,"consumerOffset":5,"lastTimestamp":1700000000000},'
        b'{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"brokerOffset":3,"consumerOffset":3,"lastTimestamp":0}}}'
    )
    table = wire.queue_keyed(wire.json_object(body)["offsetTable"])
    assert dict(table)[MessageQueue("T", "broker-a", 1)]["brokerOffset"] == 10
    assert len(table) == 2


def test_queue_keys_written_as_quoted_json_text_are_accepted() -> None:
    table = {'{"brokerName":"b","queueId":2,"topic":"T"}': 42}
    assert wire.queue_keyed(table) == [(MessageQueue("T", "b", 2), 42)]


def test_reset_body_for_cpp_clients_is_a_list() -> None:
    table = [{"topic": "T", "brokerName": "b", "queueId": 0, "offset": 7}]
    assert wire.queue_keyed(table) == [(MessageQueue("T", "b", 0), 7)]


@pytest.mark.parametrize("raw", [b"[1,2]", b"{not json", b'"text"'])
def test_unreadable_body_is_a_system_error_not_a_crash(raw: bytes) -> None:
    with pytest.raises(BrokerError) as info:
        wire.json_object(raw)
    assert info.value.code == 1


def test_records_back_to_back_decode_to_messages() -> None:
    one = encode_record(
        topic=b"T", body=b"hello", properties=b"TAGS\x01A\x02KEYS\x01k1 k2",
        queue_id=1, queue_offset=5, physical_offset=4096,
        born_host="10.0.0.2:50000", store_host="10.0.0.1:10911",
    )
    messages = wire.decode_messages(one + one)
    assert len(messages) == 2
    first = messages[0]
    assert isinstance(first, MessageExt)
    assert (first.topic, first.body, first.tags, first.keys) == ("T", b"hello", "A", ["k1", "k2"])
    assert first.offset_msg_id == "0A00000100002A9F0000000000001000"


def test_unique_ids_are_fresh_and_shaped_like_the_java_clients() -> None:
    a, b = wire.new_unique_id(), wire.new_unique_id()
    assert a != b and len(a) == 32 and a == a.upper()


def test_consumer_connection_body_lists_clients_and_subscriptions() -> None:
    body = (
        b'{"connectionSet":[{"clientAddr":"192.168.0.9:54321","clientId":"192.168.0.9@12345#1234567890",'
        b'"language":"JAVA","version":407}],"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
        b'"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","subscriptionTable":{"T":'
        b'{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG","subString":"TagA || TagB",'
        b'"subVersion":1700000000000,"tagsSet":["TagA","TagB"],"topic":"T"}}}'
    )
    conn = ConsumerConnection.from_json(wire.json_object(body))
    assert conn.connections[0].client_addr == "192.168.0.9:54321" and conn.connections[0].version == 407
    assert conn.subscriptions == {"T": "TagA || TagB"}
    assert (conn.consume_type, conn.message_model) == ("CONSUME_PASSIVELY", "CLUSTERING")


def test_broker_config_text_parses_as_java_properties() -> None:
    raw = b"# comment\nbrokerName=broker-a\nbrokerIP2=\nmsgTraceTopicName = RMQ_SYS_TRACE_TOPIC\n"
    assert wire.parse_properties(raw) == {"brokerName": "broker-a", "brokerIP2": "", "msgTraceTopicName": "RMQ_SYS_TRACE_TOPIC"}
    with pytest.raises(BrokerError):
        wire.parse_properties(b"no equals sign here\n")
