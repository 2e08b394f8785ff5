"""RocketMQ 4.9's text forms of a ConsumerRunningInfo, as `consumerStatus` prints and files them.

Pure functions over the GET_CONSUMER_RUNNING_INFO body (a dict as `jsonbody.loads` gives it):

* `format_string(info)` — `ConsumerRunningInfo.formatString()`: the properties in the order
  `java.util.Properties` (a Hashtable on Java 8, RocketMQ 4.9's runtime) iterates them, the
  subscriptions in TreeSet order, the queues in TreeMap order with `ProcessQueueInfo.toString()`,
  the per-topic RT/TPS, and the thread stacks when asked for;
* `analyze_subscription(table, now)` / `analyze_process_queue(client_id, info, now)` — the
  checks `ConsumerStatusSubCommand` runs over every client's info.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from orbitmq.admin import wire
from orbitmq.admin.jprint import jformat, mq_text
from orbitmq.common.hashing import java_string_hash

PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"


def hashtable_order(keys: Sequence[str]) -> list[int]:
    """Indexes of distinct string `keys`, put in this order into a `new Hashtable()` (capacity 11,
    load 0.75; what Java 8's `Properties` is), in the order its entry set iterates them: table
    slots from the last to the first, newest entry first within a slot."""
    capacity, threshold = 11, 8
    table: list[list[int]] = [[] for _ in range(capacity)]
    hashes = [java_string_hash(k) & 0x7FFFFFFF for k in keys]
    for i in range(len(keys)):
        if i >= threshold:  # i entries are in
            new_capacity = capacity * 2 + 1
            new_table: list[list[int]] = [[] for _ in range(new_capacity)]
            for slot in range(capacity - 1, -1, -1):
                for j in table[slot]:  # each moved entry goes to the head of its new chain
                    new_table[hashes[j] % new_capacity].insert(0, j)
            capacity, table, threshold = new_capacity, new_table, int(new_capacity * 0.75)
        table[hashes[i] % capacity].insert(0, i)
    return [j for slot in range(capacity - 1, -1, -1) for j in table[slot]]


def human_millis(ms: int) -> str:
    """`UtilAll.timeMillisToHumanString`: yyyyMMddHHmmssSSS in local time."""
    return time.strftime("%Y%m%d%H%M%S", time.localtime(ms // 1000)) + f"{ms % 1000:03d}"


def _java(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "null" if value is None else str(value)


def process_queue_text(pq: Mapping[str, Any]) -> str:
    """`ProcessQueueInfo.toString()`."""
    def n(key: str) -> int:
        return int(pq.get(key) or 0)

    return (f"ProcessQueueInfo [commitOffset={n('commitOffset')}, cachedMsgMinOffset={n('cachedMsgMinOffset')}, "
            f"cachedMsgMaxOffset={n('cachedMsgMaxOffset')}, cachedMsgCount={n('cachedMsgCount')}, "
            f"cachedMsgSizeInMiB={n('cachedMsgSizeInMiB')}, transactionMsgMinOffset={n('transactionMsgMinOffset')}, "
            f"transactionMsgMaxOffset={n('transactionMsgMaxOffset')}, transactionMsgCount={n('transactionMsgCount')}, "
            f"locked={_java(bool(pq.get('locked')))}, tryUnlockTimes={n('tryUnlockTimes')}, "
            f"lastLockTimestamp={human_millis(n('lastLockTimestamp'))}, droped={_java(bool(pq.get('droped')))}, "
            f"lastPullTimestamp={human_millis(n('lastPullTimestamp'))}, "
            f"lastConsumeTimestamp={human_millis(n('lastConsumeTimestamp'))}]")


def _subscriptions(info: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    subs = [s for s in info.get("subscriptionSet") or [] if isinstance(s, Mapping)]
    return sorted(subs, key=lambda s: f"{s.get('topic')}@{s.get('subString')}")  # SubscriptionData.compareTo


def format_string(info: Mapping[str, Any]) -> str:
    """`ConsumerRunningInfo.formatString()`."""
    out = ["#Consumer Properties#\n"]
    props = dict(info.get("properties") or {})
    keys = list(props)
    for i in hashtable_order(keys):
        out.append(jformat("%-40s: %s%n", keys[i], _java(props[keys[i]])))
    out.append("\n\n#Consumer Subscription#\n")
    for i, sub in enumerate(_subscriptions(info), start=1):
        out.append(jformat("%03d Topic: %-40s ClassFilter: %-8s SubExpression: %s%n",
                           i, sub.get("topic"), bool(sub.get("classFilterMode")), sub.get("subString")))
    queues = sorted(wire.queue_keyed(info.get("mqTable")), key=lambda e: e[0])  # MessageQueue.compareTo
    out.append("\n\n#Consumer Offset#\n")
    out.append(jformat("%-64s  %-32s  %-4s  %-20s%n", "#Topic", "#Broker Name", "#QID", "#Consumer Offset"))
    for mq, pq in queues:
        out.append(jformat("%-32s  %-32s  %-4d  %-20d%n", mq.topic, mq.broker_name, mq.queue_id,
                           int(pq.get("commitOffset") or 0)))
    out.append("\n\n#Consumer MQ Detail#\n")
    out.append(jformat("%-64s  %-32s  %-4s  %-20s%n", "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo"))
    for mq, pq in queues:
        out.append(jformat("%-64s  %-32s  %-4d  %s%n", mq.topic, mq.broker_name, mq.queue_id, process_queue_text(pq)))
    out.append("\n\n#Consumer RT&TPS#\n")
    out.append(jformat("%-64s  %14s %14s %14s %14s %18s %25s%n", "#Topic", "#Pull RT", "#Pull TPS", "#Consume RT",
                       "#ConsumeOK TPS", "#ConsumeFailed TPS", "#ConsumeFailedMsgsInHour"))
    for topic, status in sorted((info.get("statusTable") or {}).items()):
        def f(key: str, status: Mapping[str, Any] = status) -> float:
            return float(status.get(key) or 0)

        out.append(jformat("%-32s  %14.2f %14.2f %14.2f %14.2f %18.2f %25d%n", topic, f("pullRT"), f("pullTPS"),
                           f("consumeRT"), f("consumeOKTPS"), f("consumeFailedTPS"),
                           int(status.get("consumeFailedMsgs") or 0)))
    if info.get("jstack") is not None:
        out.append("\n\n#Consumer jstack#\n")
        out.append(str(info["jstack"]))
    return "".join(out)


def _is_push(info: Mapping[str, Any]) -> bool:
    return (info.get("properties") or {}).get(PROP_CONSUME_TYPE) == "CONSUME_PASSIVELY"


def _subscription_key(sub: Mapping[str, Any]) -> tuple[Any, ...]:
    """The fields `SubscriptionData.equals` compares."""
    return (bool(sub.get("classFilterMode")), tuple(sorted(sub.get("codeSet") or [])), sub.get("subString"),
            sub.get("subVersion"), tuple(sorted(sub.get("tagsSet") or [])), sub.get("topic"),
            sub.get("expressionType"))


def analyze_subscription(table: Mapping[str, Mapping[str, Any]], now_ms: int) -> bool:
    """`ConsumerRunningInfo.analyzeSubscription` over the clients' infos (keyed by client id)."""
    first = table[min(table)]
    started = int((first.get("properties") or {}).get(PROP_CONSUMER_START_TIMESTAMP) or 0)
    if not (_is_push(first) and now_ms - started > 2 * 60 * 1000):
        return True
    prev = first
    for client_id in sorted(table):
        current = table[client_id]
        if {_subscription_key(s) for s in _subscriptions(current)} != {
                _subscription_key(s) for s in _subscriptions(prev)}:
            return False
        prev = current
    return bool(_subscriptions(prev))


def analyze_process_queue(client_id: str, info: Mapping[str, Any], now_ms: int) -> str:
    """`ConsumerRunningInfo.analyzeProcessQueue`: a line per queue that looks stuck."""
    if not _is_push(info):
        return ""
    orderly = str((info.get("properties") or {}).get(PROP_CONSUME_ORDERLY)).lower() == "true"
    out = []
    for mq, pq in sorted(wire.queue_keyed(info.get("mqTable")), key=lambda e: e[0]):
        name = mq_text(mq.topic, mq.broker_name, mq.queue_id)
        if orderly:
            if not pq.get("locked"):
                out.append(jformat("%s %s can't lock for a while, %dms%n", client_id, name,
                                   now_ms - int(pq.get("lastLockTimestamp") or 0)))
            elif pq.get("droped") and int(pq.get("tryUnlockTimes") or 0) > 0:
                out.append(jformat("%s %s unlock %d times, still failed%n", client_id, name,
                                   int(pq.get("tryUnlockTimes") or 0)))
        else:
            diff = now_ms - int(pq.get("lastConsumeTimestamp") or 0)
            if diff > 60 * 1000 and int(pq.get("cachedMsgCount") or 0) > 0:
                out.append(jformat("%s %s can't consume for a while, maybe blocked, %dms%n", client_id, name, diff))
    return "".join(out)
