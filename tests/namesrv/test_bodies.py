"""NameServer JSON bodies: the two route forms, cluster info, and both RegisterBrokerBody forms."""

from __future__ import annotations

import struct
import zlib

import pytest

from orbitmq.namesrv.bodies import (
    BodyError,
    decode_register_body,
    encode_cluster_info,
    encode_compressed_register_body,
    encode_route,
    encode_topic_list,
)
from orbitmq.namesrv.routes import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicRouteData,
)

ROUTE = TopicRouteData(
    [QueueData("broker-é", 4, 4, 6, 0)],
    [BrokerData("DefaultCluster", "broker-é", {10: "10.0.0.3:10911", 2: "10.0.0.2:10911", 0: "10.0.0.1:10911"})],
    order_topic_conf="broker-é:4",
)


def test_legacy_route_has_bare_numeric_keys_and_raw_utf8() -> None:
    assert encode_route(ROUTE, standard=False) == (
        '{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",2:"10.0.0.2:10911",10:"10.0.0.3:10911"},'
        '"brokerName":"broker-é","cluster":"DefaultCluster"}],"filterServerTable":{},'
        '"orderTopicConf":"broker-é:4",'
        '"queueDatas":[{"brokerName":"broker-é","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    ).encode()


def test_standard_route_quotes_keys_in_numeric_order_and_escapes_non_ascii() -> None:
    assert encode_route(ROUTE, standard=True) == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","2":"10.0.0.2:10911","10":"10.0.0.3:10911"},'
        b'"brokerName":"broker-\\u00E9","cluster":"DefaultCluster"}],"filterServerTable":{},'
        b'"orderTopicConf":"broker-\\u00E9:4",'
        b'"queueDatas":[{"brokerName":"broker-\\u00E9","perm":6,"readQueueNums":4,"topicSysFlag":0,'
        b'"writeQueueNums":4}]}'
    )


def test_cluster_info_matches_the_protocol_reference_example() -> None:
    info = ClusterInfo(
        {"broker-a": BrokerData("DefaultCluster", "broker-a", {0: "192.168.0.1:10911", 1: "192.168.0.2:10911"})},
        {"DefaultCluster": ["broker-a"]},
    )
    assert encode_cluster_info(info) == (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.0.1:10911",1:"192.168.0.2:10911"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )


def test_topic_list_leaves_out_a_missing_broker_addr() -> None:
    assert encode_topic_list(["T", "TBW102"]) == b'{"topicList":["T","TBW102"]}'
    assert encode_topic_list(["C"], "1.2.3.4:10911") == b'{"brokerAddr":"1.2.3.4:10911","topicList":["C"]}'


def test_register_body_from_the_protocol_reference_decodes() -> None:
    body = (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":1,"timestamp":1700000000000},'
        b'"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",'
        b'"topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}}'
    )
    version, topics, filters = decode_register_body(body, compressed=False)
    assert version == DataVersion(1700000000000, 1)
    assert topics == {"T": TopicConfig("T", 4, 4, 6, "SINGLE_TAG", 0, False)}
    assert filters == []


def test_register_body_in_fastjson_lenient_dialect_decodes() -> None:
    body = b"{topicConfigSerializeWrapper:{dataVersion:{counter:2,timestamp:5},topicConfigTable:{'T':{topicName:'T'}}}}"
    version, topics, _ = decode_register_body(body, compressed=False)
    assert version == DataVersion(5, 2)
    assert topics["T"] == TopicConfig("T")  # RocketMQ's defaults: 16/16 queues, perm 6


def test_compressed_register_body_round_trips() -> None:
    body = encode_compressed_register_body(
        DataVersion(9, 3), [TopicConfig("A", 1, 2, 4, "MULTI_TAG"), TopicConfig("B", 8, 8)], ["f:1"]
    )
    version, topics, filters = decode_register_body(body, compressed=True)
    assert version == DataVersion(9, 3)
    assert topics == {"A": TopicConfig("A", 1, 2, 4, "MULTI_TAG"), "B": TopicConfig("B", 8, 8)}
    assert filters == ["f:1"]


@pytest.mark.parametrize(
    "raw",
    [
        b"not zlib at all",
        zlib.compress(struct.pack(">i", 1000) + b"{}"),  # chunk longer than the data
        zlib.compress(struct.pack(">i", 2) + b"{}" + struct.pack(">i", -1)),  # negative topic count
        zlib.compress(struct.pack(">i", 2) + b"{}" + struct.pack(">i", 1) + struct.pack(">i", 3) + b"A 1"),
        zlib.compress(struct.pack(">i", 2) + b"{}" + struct.pack(">i", 1) + struct.pack(">i", 11) + b"A x 1 6 TAG"),
    ],
)
def test_malformed_compressed_bodies_raise_body_error(raw: bytes) -> None:
    with pytest.raises(BodyError):
        decode_register_body(raw, compressed=True)


@pytest.mark.parametrize(
    "raw",
    [
        b"[1,2]",
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":"many"}}}}',
        b'{"topicConfigSerializeWrapper":{"topicConfigTable":["T"]}}',
        b'{"filterServerList":"x"}',
        b"\xff\xfe",
    ],
)
def test_malformed_json_bodies_raise_body_error(raw: bytes) -> None:
    with pytest.raises(BodyError):
        decode_register_body(raw, compressed=False)


def test_a_brokers_register_body_carries_its_master_epoch_as_state_version() -> None:
    from orbitmq.broker.registration import register_body
    from orbitmq.broker.topics import TopicTable

    topics = TopicTable(clock_ms=lambda: 7)
    topics.put(TopicConfig("T", 4, 4))
    version, _, _ = decode_register_body(register_body(topics, 6), compressed=False)
    assert version.state_version == 0  # without a controller, the RocketMQ 4.x body
    topics.data_version = topics.data_version.next(8, 3)  # what becoming master of epoch 3 does
    version, configs, _ = decode_register_body(register_body(topics, 6), compressed=False)
    assert version == topics.data_version and version.state_version == 3 and list(configs) == ["T"]
