"""The shared value types of `orbitmq.common`: defaults, JSON shapes and malformed input, without sockets."""

from __future__ import annotations

import pytest

from orbitmq.common import jsonbody
from orbitmq.common.consume_stats import ConsumeStats, OffsetWrapper
from orbitmq.common.dataversion import DataVersion
from orbitmq.common.queue import MessageQueue
from orbitmq.common.route import BrokerData, ClusterInfo, QueueData, TopicRouteData
from orbitmq.common.subscription_group import SubscriptionGroupConfig
from orbitmq.common.topic_config import TopicConfig

ROUTE = TopicRouteData(
    (QueueData("broker-b", 2, 3, 6), QueueData("broker-a", 1, 1, 6)),
    (
        BrokerData("C", "broker-b", {1: "10.0.0.2:10911", 0: "10.0.0.1:10911"}),
        BrokerData("C", "broker-a", {1: "10.0.0.3:10911"}),
    ),
)


def test_route_round_trips_through_both_json_forms() -> None:
    legacy = ROUTE.encode(standard=False)
    standard = ROUTE.encode(standard=True)
    assert b'"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}' in legacy
    assert b'"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}' in standard
    assert b'"filterServerTable":{}' in legacy and b"orderTopicConf" not in legacy
    assert TopicRouteData.parse(legacy) == ROUTE
    assert TopicRouteData.parse(standard) == ROUTE


def test_route_lists_only_queues_a_master_can_take_for_writes() -> None:
    assert ROUTE.master_addrs() == {"broker-b": "10.0.0.1:10911"}
    assert ROUTE.write_queues("T") == [MessageQueue("T", "broker-b", i) for i in range(3)]
    assert ROUTE.read_queues("T") == [MessageQueue("T", "broker-a", 0)] + [
        MessageQueue("T", "broker-b", i) for i in range(2)
    ]
    assert ROUTE.broker("broker-a") is not None and ROUTE.broker("broker-a").select_addr() == "10.0.0.3:10911"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"queueDatas":{"x":1}}',
        b'{"queueDatas":[{"perm":6}]}',
        b'{"queueDatas":[{"brokerName":"b","readQueueNums":"many"}]}',
        b'{"brokerDatas":[{"brokerName":"b","brokerAddrs":{"master":"h:1"}}]}',
        b'{"brokerDatas":["b"]}',
    ],
)
def test_malformed_route_bodies_raise_value_error_naming_the_field(body: bytes) -> None:
    with pytest.raises(ValueError) as info:
        TopicRouteData.parse(body)
    assert "Traceback" not in str(info.value) and str(info.value)


def test_cluster_info_is_written_in_the_legacy_form_and_read_back() -> None:
    info = ClusterInfo({"broker-a": BrokerData("C", "broker-a", {0: "h:1"})}, {"C": ("broker-a",)})
    body = info.encode()
    assert body == (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"h:1"},"brokerName":"broker-a","cluster":"C"}},'
        b'"clusterAddrTable":{"C":["broker-a"]}}'
    )
    assert ClusterInfo.from_json(jsonbody.loads(body)) == info  # type: ignore[arg-type]
    assert info.master_addrs("C") == {"broker-a": "h:1"}


def test_topic_config_has_rocketmq_defaults_and_reads_strings_as_fastjson_does() -> None:
    assert TopicConfig("T") == TopicConfig("T", 16, 16, 6, "SINGLE_TAG", 0, False)
    assert TopicConfig.from_json({}, "T") == TopicConfig("T")
    # A quoted "false" is false (bool("false") would be true).
    assert TopicConfig.from_json({"topicName": "T", "order": "false", "perm": "4"}).order is False
    assert TopicConfig.from_json({"order": "true"}, "T").order is True
    assert TopicConfig.from_json(TopicConfig("T", 2, 3, 7, "MULTI_TAG", 1, True).to_json()) == TopicConfig(
        "T", 2, 3, 7, "MULTI_TAG", 1, True
    )
    assert str(TopicConfig("T", 4, 4, 7)) == (
        "TopicConfig [topicName=T, readQueueNums=4, writeQueueNums=4, perm=RWX, topicFilterType=SINGLE_TAG, "
        "topicSysFlag=0, order=false]"
    )
    with pytest.raises(ValueError, match="readQueueNums"):
        TopicConfig.from_json({"readQueueNums": [1]}, "T")


def test_subscription_group_config_round_trips_and_needs_a_name() -> None:
    config = SubscriptionGroupConfig("G", consume_broadcast_enable=False, retry_max_times=3)
    assert SubscriptionGroupConfig.from_json(config.to_json()) == config
    orderly = SubscriptionGroupConfig("G", consume_message_orderly=True)
    assert orderly.to_json()["consumeMessageOrderly"] is True  # RocketMQ 5's field name
    assert SubscriptionGroupConfig.from_json(orderly.to_json()) == orderly
    assert SubscriptionGroupConfig.from_json({"groupName": "G"}).consume_message_orderly is False  # a 4.x body
    assert SubscriptionGroupConfig.from_json({"groupName": "G", "consumeEnable": "false"}).consume_enable is False
    with pytest.raises(ValueError, match="groupName"):
        SubscriptionGroupConfig.from_json({"retryMaxTimes": 3})


def test_consume_stats_are_written_with_object_keys_and_read_back_sorted() -> None:
    stats = ConsumeStats(
        {MessageQueue("T", "b", 1): OffsetWrapper(10, 4, 99), MessageQueue("T", "b", 0): OffsetWrapper(3, 3)}, 1.5
    )
    body = jsonbody.dumps_legacy(stats.to_json())
    assert body == (
        b'{"consumeTps":1.5,"offsetTable":{{"brokerName":"b","queueId":1,"topic":"T"}:'
        b'{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":99},{"brokerName":"b","queueId":0,"topic":"T"}:'
        b'{"brokerOffset":3,"consumerOffset":3,"lastTimestamp":0}}}'
    )
    back = ConsumeStats.from_json(jsonbody.loads(body))  # type: ignore[arg-type]
    assert list(back.offset_table) == [MessageQueue("T", "b", 0), MessageQueue("T", "b", 1)]
    assert back.diff_total == 6 and back.consume_tps == 1.5
    with pytest.raises(ValueError, match="offsetTable"):
        ConsumeStats.from_json({"offsetTable": [1, 2]})


def test_data_version_reads_quoted_numbers_and_refuses_others() -> None:
    assert DataVersion.from_json({"timestamp": "5", "counter": 2}) == DataVersion(5, 2)
    assert DataVersion.from_json(None) == DataVersion()
    with pytest.raises(ValueError, match="counter"):
        DataVersion.from_json({"counter": True})


def test_data_version_carries_a_state_version_only_when_set() -> None:
    plain = DataVersion(5, 2)
    assert plain.to_json() == {"counter": 2, "timestamp": 5}  # the RocketMQ 4.x shape
    epoch = DataVersion(5, 2, 3)
    assert epoch.to_json() == {"counter": 2, "timestamp": 5, "stateVersion": 3}
    assert DataVersion.from_json(epoch.to_json()) == epoch
    assert DataVersion.from_json({"counter": 2, "timestamp": 5}) == plain
    assert epoch != plain
    assert epoch.next(9) == DataVersion(9, 3, 3)  # a topic change keeps the epoch
    assert plain.next(9, 4) == DataVersion(9, 3, 4)
