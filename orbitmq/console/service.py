"""What the console's JSON API answers, computed only through `AdminClient` (the CLI's admin API).

Every function takes a connected AdminClient and returns plain JSON values
(dicts, lists, str, int, float, bool). Nothing here talks to a peer except
through the AdminClient, so the console and `orbitmq admin` cannot disagree.
Long lists (messages of a topic, dead letters) are paged here, server side:
only the requested page is pulled from the brokers.
"""

from __future__ import annotations

import base64
import io
import time
from collections.abc import Sequence
from typing import Any

from orbitmq.admin import dlq
from orbitmq.admin.api import AdminClient
from orbitmq.admin.commands.consumer import group_brokers
from orbitmq.admin.commands.message import find_by_key, find_by_unique_key, looks_like_offset_id
from orbitmq.admin.commands.offset import reset_offsets
from orbitmq.admin.commands.topic import ORDER_TOPIC_CONFIG
from orbitmq.admin.commands.trace import find_trace
from orbitmq.admin.dlq import DeadLetter
from orbitmq.admin.models import TopicConfig, perm_text
from orbitmq.client.queue import MessageQueue
from orbitmq.client.trace import DEFAULT_TRACE_TOPIC
from orbitmq.common import names as topic_names
from orbitmq.common.message import MessageExt
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.errors import BrokerError, ClientError, ConsumerNotOnline, OrbitMQError, TopicNotExist

#: The most messages one page may ask for.
MAX_PAGE_SIZE = 100
#: Messages a search by key returns at most (mqadmin queryMsgByKey's default).
MAX_KEY_RESULTS = 64


def message_json(msg: MessageExt) -> dict[str, Any]:
    """One message as the pages show it: fields, properties and the body three ways."""
    body = bytes(msg.body)
    text = body.decode("utf-8", errors="replace")
    return {
        "msgId": msg.msg_id,
        "offsetMsgId": msg.offset_msg_id,
        "topic": msg.topic,
        "tags": msg.tags or "",
        "keys": list(msg.keys),
        "queueId": msg.queue_id,
        "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commit_log_offset,
        "reconsumeTimes": msg.reconsume_times,
        "bornTimestamp": msg.born_timestamp,
        "storeTimestamp": msg.store_timestamp,
        "bornHost": msg.born_host,
        "storeHost": msg.store_host,
        "sysFlag": msg.sys_flag,
        "properties": dict(sorted(msg.properties.items())),
        "bodySize": len(body),
        "bodyText": text,
        "bodyBase64": base64.b64encode(body).decode("ascii"),
    }


# --- cluster -------------------------------------------------------------------------


async def cluster(admin: AdminClient) -> dict[str, Any]:
    """Every broker the NameServer lists, with the runtime figures it reports (version, disk, TPS)."""
    info = await admin.cluster_info()
    brokers: list[dict[str, Any]] = []
    for cluster_name, names in info.cluster_addr_table.items():
        for name in names:
            data = info.broker_addr_table.get(name)
            if data is None:
                continue
            for broker_id, addr in sorted(data.broker_addrs.items()):
                entry: dict[str, Any] = {
                    "cluster": cluster_name, "brokerName": name, "brokerId": broker_id, "addr": addr,
                    "role": "MASTER" if broker_id == 0 else "SLAVE", "runtime": {}, "error": "",
                }
                try:
                    entry["runtime"] = await admin.broker_runtime_info(addr)
                except (OrbitMQError, OSError) as exc:  # one silent broker must not hide the others
                    entry["error"] = str(exc) or type(exc).__name__
                brokers.append(entry)
    return {"brokers": brokers}


# --- topics --------------------------------------------------------------------------


def topic_kind(topic: str) -> str:
    if topic_names.is_retry_topic(topic):
        return "retry"
    if topic_names.is_dlq_topic(topic):
        return "dlq"
    if topic in (DEFAULT_TRACE_TOPIC, topic_names.AUTO_CREATE_TOPIC_KEY_TOPIC, "SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC",
                 "RMQ_SYS_TRANS_OP_HALF_TOPIC", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT") or topic.startswith("rmq_sys_"):
        return "system"
    return "normal"


async def topics(admin: AdminClient, query: str, kind: str, page: int, size: int) -> dict[str, Any]:
    names = await admin.topic_list()
    matched = [t for t in names if query.lower() in t.lower() and (kind in ("", "all") or topic_kind(t) == kind)]
    start = page * size
    return {
        "total": len(matched), "page": page, "size": size,
        "items": [{"topic": t, "kind": topic_kind(t)} for t in matched[start:start + size]],
    }


async def topic_detail(admin: AdminClient, topic: str) -> dict[str, Any]:
    """Route (brokers, queue counts, perms) and per-queue min/max offsets."""
    route = await admin.topic_route(topic)
    masters = route.master_addrs()
    queues: list[dict[str, Any]] = []
    for name, addr in sorted(masters.items()):
        for stat in await admin.topic_stats(addr, topic):
            queues.append({
                "brokerName": stat.queue.broker_name, "queueId": stat.queue.queue_id,
                "minOffset": stat.min_offset, "maxOffset": stat.max_offset,
                "lastUpdateTimestamp": stat.last_update_timestamp,
            })
    return {
        "topic": topic,
        "brokers": [
            {"brokerName": b.broker_name, "cluster": b.cluster,
             "addrs": {str(k): v for k, v in sorted(b.broker_addrs.items())}}
            for b in route.broker_datas
        ],
        "queueDatas": [
            {"brokerName": q.broker_name, "readQueueNums": q.read_queue_nums, "writeQueueNums": q.write_queue_nums,
             "perm": q.perm, "permText": perm_text(q.perm)}
            for q in route.queue_datas
        ],
        "queues": queues,
        "messages": sum(q["maxOffset"] - q["minOffset"] for q in queues),
    }


async def _cluster_masters(admin: AdminClient, cluster_name: str | None) -> dict[str, str]:
    if cluster_name:
        return await admin.cluster_masters(cluster_name)
    info = await admin.cluster_info()
    masters: dict[str, str] = {}
    for name in info.cluster_addr_table:
        masters.update(info.master_addrs(name))
    if not masters:
        raise ClientError("no master broker is registered with the NameServer")
    return masters


async def put_topic(
    admin: AdminClient, topic: str, read_queues: int, write_queues: int, perm: int, order: bool,
    cluster_name: str | None,
) -> dict[str, Any]:
    """updateTopic -c: create or change the topic on every master of the cluster (all clusters when none)."""
    config = TopicConfig(topic, read_queues, write_queues, perm, order=order)
    targets = await _cluster_masters(admin, cluster_name)
    for addr in targets.values():
        await admin.create_topic(addr, config)
    if order:
        conf = ";".join(f"{name}:{write_queues}" for name in sorted(targets))
        await admin.put_kv_config(ORDER_TOPIC_CONFIG, topic, conf)
    return {"topic": topic, "brokers": sorted(targets)}


async def delete_topic(admin: AdminClient, topic: str) -> dict[str, Any]:
    """deleteTopic: from every master serving it, then from the NameServers."""
    route = await admin.topic_route(topic)
    masters = route.master_addrs()
    for addr in masters.values():
        await admin.delete_topic_in_broker(addr, topic)
    await admin.delete_topic_in_namesrv(topic)
    return {"topic": topic, "brokers": sorted(masters)}


# --- consumer groups -----------------------------------------------------------------


async def groups(admin: AdminClient, query: str, page: int, size: int) -> dict[str, Any]:
    """Subscription groups of every master, with online client count and total lag."""
    info = await admin.cluster_info()
    names: set[str] = set()
    for data in info.broker_addr_table.values():
        if data.master_addr:
            names.update((await admin.subscription_groups(data.master_addr)).keys())
    matched = sorted(g for g in names if query.lower() in g.lower())
    start = page * size
    items = []
    for group in matched[start:start + size]:
        items.append({"group": group, **(await _group_summary(admin, group))})
    return {"total": len(matched), "page": page, "size": size, "items": items}


async def _group_summary(admin: AdminClient, group: str) -> dict[str, Any]:
    brokers = await group_brokers(admin, group)
    online = 0
    lag = 0
    tps = 0.0
    for addr in brokers.values():
        try:
            online = max(online, len((await admin.consumer_connection(addr, group)).connections))
        except (BrokerError, ConsumerNotOnline):
            pass
        try:
            stats = await admin.consume_stats(addr, group)
        except BrokerError:
            continue
        lag += stats.diff_total
        tps += stats.consume_tps
    return {"online": online, "lag": lag, "consumeTps": tps}


async def group_detail(admin: AdminClient, group: str) -> dict[str, Any]:
    """Online clients, subscriptions, and lag per queue in messages and seconds."""
    brokers = await group_brokers(admin, group)
    now = int(time.time() * 1000)
    clients: dict[str, dict[str, Any]] = {}
    subscriptions: dict[str, str] = {}
    model = ""
    queues: list[dict[str, Any]] = []
    tps = 0.0
    for addr in brokers.values():
        try:
            conn = await admin.consumer_connection(addr, group)
        except BrokerError:
            conn = None
        if conn is not None:
            model = conn.message_model or model
            subscriptions.update(conn.subscriptions)
            for c in conn.connections:
                clients[c.client_id] = {"clientId": c.client_id, "clientAddr": c.client_addr,
                                        "language": c.language, "version": c.version}
        try:
            stats = await admin.consume_stats(addr, group)
        except BrokerError:
            continue
        tps += stats.consume_tps
        for mq, w in sorted(stats.offset_table.items()):
            queues.append({
                "topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id,
                "brokerOffset": w.broker_offset, "consumerOffset": w.consumer_offset, "lag": w.diff,
                "lagSeconds": round(max(0, now - w.last_timestamp) / 1000, 3) if w.diff and w.last_timestamp else 0.0,
            })
    return {
        "group": group, "messageModel": model, "clients": sorted(clients.values(), key=lambda c: c["clientId"]),
        "subscriptions": subscriptions, "queues": queues, "lag": sum(q["lag"] for q in queues), "consumeTps": tps,
    }


async def reset_offset(admin: AdminClient, group: str, topic: str, timestamp_ms: int) -> dict[str, Any]:
    """resetOffsetByTime (force): through online consumers, else writing the committed offsets.

    `timestamp_ms` -1 moves every queue to its max offset (skip the backlog).
    """
    offsets = await reset_offsets(admin, topic, group, timestamp_ms, True)
    return {"offsets": [{"brokerName": q.broker_name, "queueId": q.queue_id, "offset": o}
                        for q, o in sorted(offsets.items())]}


# --- messages ------------------------------------------------------------------------


async def _queue_ranges(
    admin: AdminClient, topic: str, begin_ms: int, end_ms: int
) -> list[tuple[str, MessageQueue, int, int]]:
    """(broker addr, queue, first offset, end offset) of each queue for messages stored in [begin, end]."""
    route = await admin.topic_route(topic)
    ranges: list[tuple[str, MessageQueue, int, int]] = []
    for name, addr in sorted(route.master_addrs().items()):
        for stat in await admin.topic_stats(addr, topic):
            if stat.max_offset <= stat.min_offset:
                continue
            first = max(stat.min_offset, await admin.search_offset(addr, stat.queue, begin_ms))
            last = min(stat.max_offset, await admin.search_offset(addr, stat.queue, end_ms) + 1)
            if last > first:
                ranges.append((addr, stat.queue, first, last))
    return ranges


async def messages_by_time(
    admin: AdminClient, topic: str, begin_ms: int, end_ms: int, page: int, size: int
) -> dict[str, Any]:
    """One page of the topic's messages stored in [begin, end], queue by queue.

    Offsets are found by time on each queue (SEARCH_OFFSET_BY_TIMESTAMP), so
    only the page's messages are pulled however long the topic is. `total`
    counts offsets in range (the edges may hold a few messages just outside
    it, which are dropped from the page).
    """
    ranges = await _queue_ranges(admin, topic, begin_ms, end_ms)
    total = sum(last - first for _, _, first, last in ranges)
    skip = page * size
    items: list[dict[str, Any]] = []
    for addr, queue, first, last in ranges:
        count = last - first
        if skip >= count:
            skip -= count
            continue
        offset = first + skip
        skip = 0
        while offset < last and len(items) < size:
            result = await admin.pull(addr, queue, offset, min(32, size - len(items), last - offset))
            if not result.messages:
                break
            for m in result.messages:
                if m.queue_offset >= last or len(items) >= size:
                    break
                if begin_ms <= m.store_timestamp <= end_ms:
                    items.append(message_json(m))
            offset = result.messages[-1].queue_offset + 1
        if len(items) >= size:
            break
    return {"total": total, "page": page, "size": size, "items": items}


async def messages_by_key(admin: AdminClient, topic: str, key: str) -> dict[str, Any]:
    return {"items": [message_json(m) for m in await find_by_key(admin, topic, key, MAX_KEY_RESULTS)]}


async def message_by_id(admin: AdminClient, topic: str, msg_id: str) -> dict[str, Any]:
    """By offset message id (asked of the broker it names) or by UNIQ_KEY in the topic's index."""
    msg_id = msg_id.strip().upper()
    msgs: list[MessageExt] = []
    if looks_like_offset_id(msg_id):
        store_host, phys = parse_offset_msg_id(msg_id)
        try:
            msgs = [await admin.view_message(store_host, phys)]
        except BrokerError:
            msgs = []
    if not msgs and topic:
        msgs = await find_by_unique_key(admin, topic, msg_id)
    return {"items": [message_json(m) for m in msgs]}


async def message_trace(admin: AdminClient, msg_id: str, trace_topic: str = DEFAULT_TRACE_TOPIC) -> dict[str, Any]:
    """The message's trace records from the trace topic ([] when the topic or the records are absent)."""
    try:
        rows = await find_trace(admin, msg_id, trace_topic)
    except TopicNotExist:
        return {"traceTopic": trace_topic, "items": []}
    items = []
    for ctx in rows:
        bean = ctx.beans[0]
        items.append({
            "type": ctx.trace_type.value, "group": ctx.group, "clientHost": ctx.client_host,
            "timestamp": ctx.timestamp, "costMs": ctx.cost_ms, "success": ctx.success,
            "requestId": ctx.request_id, "topic": bean.topic, "storeHost": bean.store_host,
            "retryTimes": bean.retry_times, "offsetMsgId": bean.offset_msg_id,
        })
    return {"traceTopic": trace_topic, "items": items}


async def resend_to_group(admin: AdminClient, group: str, offset_msg_id: str, client_id: str) -> dict[str, Any]:
    """CONSUME_MESSAGE_DIRECTLY: one online client of the group consumes the message again."""
    if not client_id:
        brokers = await group_brokers(admin, group)
        for addr in brokers.values():
            try:
                conn = await admin.consumer_connection(addr, group)
            except BrokerError:
                continue
            if conn.connections:
                client_id = conn.connections[0].client_id
                break
        if not client_id:
            raise ConsumerNotOnline(f"no client of group {group!r} is online")
    result = await admin.consume_message_directly(group, client_id, offset_msg_id)
    return {"clientId": client_id, "result": result}


# --- producers -----------------------------------------------------------------------


async def producers(admin: AdminClient, group: str) -> dict[str, Any]:
    """The producer group's client connections on every master."""
    info = await admin.cluster_info()
    items = []
    for name, data in sorted(info.broker_addr_table.items()):
        if not data.master_addr:
            continue
        for c in await admin.producer_connection(data.master_addr, group):
            items.append({"brokerName": name, "clientId": c.client_id, "clientAddr": c.client_addr,
                          "language": c.language, "version": c.version})
    return {"group": group, "items": items}


# --- dead letters --------------------------------------------------------------------


def dead_letter_json(letter: DeadLetter) -> dict[str, Any]:
    """A dead letter as the pages show it: the message, plus what `orbitmq admin queryDlq` tells of it."""
    return {
        **message_json(letter.msg),
        "originalTopic": letter.original_topic, "originalId": letter.original_id, "error": letter.error,
        "attempts": letter.attempts, "resent": letter.resent,
    }


async def dlq_page(admin: AdminClient, group: str, page: int, size: int) -> dict[str, Any]:
    """One page of the group's dead letters, oldest first, as queryDlq lists them.

    Like queryDlq (admin/dlq.py `browse`), this reads the whole %DLQ%<group>
    on the server to leave out the resend markers and flag resent letters;
    only the page goes to the browser.
    """
    letters = await dlq.browse(admin, group)
    start = page * size
    return {"total": len(letters), "page": page, "size": size,
            "items": [dead_letter_json(d) for d in letters[start:start + size]]}


async def dlq_resend(admin: AdminClient, group: str, msg_ids: Sequence[str]) -> dict[str, Any]:
    """resendDlq: the given dead letters (by offset id, message id or original id; all when none) go
    back to their original topic once each; letters resent before are skipped."""
    report = await dlq.resend(admin, group, dlq.Selection.of(ids=msg_ids))
    return {"matched": report.matched, "resent": report.resent, "skipped": report.skipped,
            "targets": dict(sorted(report.targets.items()))}


async def dlq_export(admin: AdminClient, group: str) -> list[str]:
    """exportDlq's JSON lines, one per dead letter."""
    out = io.StringIO()
    dlq.export_jsonl(await dlq.browse(admin, group), out)
    return out.getvalue().splitlines(keepends=True)


# --- ACL -----------------------------------------------------------------------------


async def acl(admin: AdminClient) -> dict[str, Any]:
    """Each master's accounts (secret keys left out) and global whitelist."""
    info = await admin.cluster_info()
    brokers = []
    for name, data in info.broker_addr_table.items():
        if not data.master_addr:
            continue
        entry: dict[str, Any] = {"brokerName": name, "addr": data.master_addr, "accounts": [],
                                 "globalWhiteAddrs": [], "error": ""}
        try:
            config = await admin.acl_config(data.master_addr)
        except BrokerError as exc:
            entry["error"] = f"CODE: {exc.code} DESC: {exc.remark}"
        else:
            white = config.get("globalWhiteAddrs")
            accounts = config.get("plainAccessConfigs")
            entry["globalWhiteAddrs"] = [str(a) for a in white] if isinstance(white, list) else []
            for account in accounts if isinstance(accounts, list) else []:
                if isinstance(account, dict):
                    entry["accounts"].append({k: v for k, v in account.items() if k != "secretKey"})
        brokers.append(entry)
    return {"brokers": brokers}
