"""Objects the admin commands print as RocketMQ 4.9's tools print them with fastjson.

* TopicRouteSubCommand.printData: `topicRouteData.toJson(true)` (fastjson PrettyFormat: tabs,
  bean fields alphabetical, `brokerAddrs` a HashMap<Long, String> with bare numeric keys).
* QueryConsumeQueueCommand: the SubscriptionData bean, its sets in HashSet order.
* AllocateMQSubCommand: `RemotingSerializable.toJson(rr, false)` of a RebalanceResult whose
  `result` is a HashMap<String, List<MessageQueue>>, the queues taken from the HashSet that
  `MQClientInstance.topicRouteData2TopicSubscribeInfo` builds (so in that HashSet's order).
The orders below were produced by Java's own HashMap/HashSet.
"""

from __future__ import annotations

from orbitmq.admin.commands.ops import hash_set_order
from orbitmq.admin.commands.topic import route_fastjson
from orbitmq.client.queue import MessageQueue
from orbitmq.common.route import BrokerData, QueueData, TopicRouteData


def test_topic_route_prints_fastjsons_pretty_form() -> None:
    route = TopicRouteData(
        (QueueData("broker-a", 4, 4, 6, 0),),
        (BrokerData("DefaultCluster", "broker-a", {1: "127.0.0.1:10921", 0: "127.0.0.1:10911"}),),
    )
    assert route_fastjson(route) == (
        '{\n'
        '\t"brokerDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"\n'
        '\t\t\t},\n'
        '\t\t\t"brokerName":"broker-a",\n'
        '\t\t\t"cluster":"DefaultCluster"\n'
        '\t\t}\n'
        '\t],\n'
        '\t"filterServerTable":{},\n'
        '\t"queueDatas":[\n'
        '\t\t{\n'
        '\t\t\t"brokerName":"broker-a",\n'
        '\t\t\t"perm":6,\n'
        '\t\t\t"readQueueNums":4,\n'
        '\t\t\t"topicSysFlag":0,\n'
        '\t\t\t"writeQueueNums":4\n'
        '\t\t}\n'
        '\t]\n'
        '}'
    )


def test_allocate_mq_takes_the_queues_in_the_hash_sets_order() -> None:
    queues = [MessageQueue("TopicTest", b, i) for b in ("broker-a", "broker-b") for i in range(8)]
    java = ("broker-a/7, broker-a/6, broker-b/7, broker-a/3, broker-b/4, broker-a/2, broker-b/3, broker-a/5, "
            "broker-b/6, broker-a/4, broker-b/5, broker-b/0, broker-a/1, broker-b/2, broker-a/0, broker-b/1")
    assert ", ".join(f"{q.broker_name}/{q.queue_id}" for q in hash_set_order(queues)) == java


def test_query_cq_prints_the_subscriptions_sets_in_hash_set_order() -> None:
    """QueryConsumeQueueCommand prints `JSON.toJSONString(subscriptionData, true)`: tagsSet is a
    HashSet<String>, codeSet a HashSet<Integer> (a negative hash code included here)."""
    from orbitmq.admin.commands.browse import subscription_java_sets
    from orbitmq.common.hashing import java_string_hash

    tags = ["TagC", "TagA", "TagB", "order", "pay", "OrderCreatedEvent", "polygenelubricants"]
    out = subscription_java_sets({"tagsSet": tags, "codeSet": [java_string_hash(t) for t in tags]})
    assert out["tagsSet"] == ["TagA", "polygenelubricants", "OrderCreatedEvent", "pay", "TagC", "TagB", "order"]
    assert out["codeSet"] == [2598919, -2147483648, 1135782624, 110760, 2598921, 2598920, 106006350]
