"""ConsumerRunningInfo's text forms as RocketMQ 4.9 writes them (ConsumerRunningInfo.formatString,
analyzeSubscription, analyzeProcessQueue; ProcessQueueInfo.toString; UtilAll.timeMillisToHumanString).

The property order comes from Java 8's Properties (a Hashtable): the order below is what
java.util.Hashtable printed for these keys put in this order.
"""

from __future__ import annotations

import time

from orbitmq.admin.running_text import (
    analyze_process_queue,
    analyze_subscription,
    format_string,
    hashtable_order,
    human_millis,
)
from orbitmq.common.lenientjson import ObjectKeyMap

_KEYS_TEXT = ("namesrvAddr consumerGroup messageModel consumeFromWhere consumeTimestamp allocateMessageQueueStrategy "
        "subscription consumeThreadMin consumeThreadMax adjustThreadPoolNumsThreshold consumeConcurrentlyMaxSpan "
        "pullThresholdForQueue pullInterval consumeMessageBatchMaxSize pullBatchSize postSubscriptionWhenPull "
        "unitMode maxReconsumeTimes suspendCurrentQueueTimeMillis consumeTimeout PROP_NAMESERVER_ADDR "
        "PROP_THREADPOOL_CORE_SIZE PROP_CONSUMEORDERLY PROP_CONSUME_TYPE PROP_CLIENT_VERSION "
        "PROP_CONSUMER_START_TIMESTAMP")
_JAVA_ORDER_TEXT = ("maxReconsumeTimes adjustThreadPoolNumsThreshold unitMode consumerGroup messageModel namesrvAddr "
              "allocateMessageQueueStrategy suspendCurrentQueueTimeMillis PROP_CLIENT_VERSION "
              "consumeConcurrentlyMaxSpan postSubscriptionWhenPull consumeTimestamp PROP_CONSUME_TYPE consumeTimeout "
              "consumeMessageBatchMaxSize PROP_THREADPOOL_CORE_SIZE pullThresholdForQueue consumeFromWhere "
              "pullInterval PROP_NAMESERVER_ADDR pullBatchSize consumeThreadMin PROP_CONSUMER_START_TIMESTAMP "
              "consumeThreadMax subscription PROP_CONSUMEORDERLY")
KEYS = _KEYS_TEXT.split()
JAVA_ORDER = _JAVA_ORDER_TEXT.split()


def test_properties_come_in_java_8_hashtable_order() -> None:
    assert [KEYS[i] for i in hashtable_order(KEYS)] == JAVA_ORDER


def pf(fmt: str, *args: object) -> str:
    """Java's String.format for these conversions (written out here, not taken from the code under test)."""
    return fmt % args


def _info(now: int, **pq: object) -> dict[str, object]:
    queue = {"commitOffset": 7, "cachedMsgCount": 2, "lastConsumeTimestamp": now - 90_000, **pq}
    return {
        "properties": {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "PROP_CONSUMEORDERLY": "false",
                       "PROP_CONSUMER_START_TIMESTAMP": str(now - 600_000)},
        "subscriptionSet": [{"topic": "T", "subString": "*", "classFilterMode": False, "subVersion": 1}],
        "mqTable": ObjectKeyMap([({"topic": "T", "brokerName": "b", "queueId": 1}, queue)]),
        "statusTable": {"T": {"pullRT": 1.5, "pullTPS": 2, "consumeRT": 0, "consumeOKTPS": 3.25,
                              "consumeFailedTPS": 0, "consumeFailedMsgs": 4}},
    }


def test_format_string_has_rocketmqs_sections_and_columns() -> None:
    now = int(time.time() * 1000)
    text = format_string({**_info(now, lastPullTimestamp=0), "jstack": "main: RUNNABLE\n"})
    pull = human_millis(0)
    consume = human_millis(now - 90_000)
    assert text == (
        "#Consumer Properties#\n"
        + "".join(pf("%-40s: %s\n", k, v) for k, v in [
            ("PROP_CONSUMER_START_TIMESTAMP", str(now - 600_000)), ("PROP_CONSUMEORDERLY", "false"),
            ("PROP_CONSUME_TYPE", "CONSUME_PASSIVELY")])  # Hashtable order
        + "\n\n#Consumer Subscription#\n"
        + pf("001 Topic: %-40s ClassFilter: %-8s SubExpression: %s\n", "T", "false", "*")
        + "\n\n#Consumer Offset#\n"
        + pf("%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#Consumer Offset")
        + pf("%-32s  %-32s  %-4d  %-20d\n", "T", "b", 1, 7)
        + "\n\n#Consumer MQ Detail#\n"
        + pf("%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo")
        + pf("%-64s  %-32s  %-4d  %s\n", "T", "b", 1, (
            "ProcessQueueInfo [commitOffset=7, cachedMsgMinOffset=0, cachedMsgMaxOffset=0, cachedMsgCount=2, "
            "cachedMsgSizeInMiB=0, transactionMsgMinOffset=0, transactionMsgMaxOffset=0, transactionMsgCount=0, "
            f"locked=false, tryUnlockTimes=0, lastLockTimestamp={pull}, droped=false, lastPullTimestamp={pull}, "
            f"lastConsumeTimestamp={consume}]"))
        + "\n\n#Consumer RT&TPS#\n"
        + pf("%-64s  %14s %14s %14s %14s %18s %25s\n", "#Topic", "#Pull RT", "#Pull TPS", "#Consume RT",
             "#ConsumeOK TPS", "#ConsumeFailed TPS", "#ConsumeFailedMsgsInHour")
        + pf("%-32s  %14.2f %14.2f %14.2f %14.2f %18.2f %25d\n", "T", 1.5, 2, 0, 3.25, 0, 4)
        + "\n\n#Consumer jstack#\nmain: RUNNABLE\n"
    )
    assert len(human_millis(now)) == 17 and human_millis(now).endswith(f"{now % 1000:03d}")


def test_the_checks_flag_blocked_queues_and_different_subscriptions() -> None:
    now = int(time.time() * 1000)
    info = _info(now)
    assert analyze_process_queue("c1", info, now) == (
        "c1 MessageQueue [topic=T, brokerName=b, queueId=1] can't consume for a while, maybe blocked, 90000ms\n")
    assert analyze_subscription({"c1": info, "c2": info}, now)
    other = {**info, "subscriptionSet": [{"topic": "T", "subString": "TagA", "subVersion": 1}]}
    assert not analyze_subscription({"c1": info, "c2": other}, now)
    young = {**info, "properties": {**info["properties"], "PROP_CONSUMER_START_TIMESTAMP": str(now)}}  # type: ignore[dict-item]
    assert analyze_subscription({"c1": young, "c2": other}, now), "checked only after two minutes"
    orderly = {**info, "properties": {**info["properties"], "PROP_CONSUMEORDERLY": "true"}}  # type: ignore[dict-item]
    assert "can't lock for a while" in analyze_process_queue("c1", orderly, now)
