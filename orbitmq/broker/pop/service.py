"""`PopService`: POP consumption over the store (the async shell around broker/pop's cores).

    service = PopService(...); await service.start()      # replays the revive topic, starts reviving
    outcome = await service.pop(request, owner=peer.id)    # PopOutcome (release it after writing)
    await service.ack(group, topic, queue_id, offset, extra_info)
    pop_time, invisible, revive_qid = await service.change_invisible(..., invisible_time)
    await service.close()

Non-FIFO pops write a checkpoint (CK) record to the revive topic before answering and move
the group's consumer offset past the batch; acks and changes write ack/CK records; the revive
loop re-puts what falls due un-acked to the POP retry topic (or the DLQ). At start, each revive
queue is read from its revive offset to rebuild the in-flight table. FIFO pops keep order info
(order.py) in config/consumerOrderInfo.json. See docs/pop.md.

Owned by the broker's event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.consumers import Subscription
from orbitmq.broker.handlers.pull import subscription_from_expression
from orbitmq.broker.longpoll import PullWaiters
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.pop.order import OrderTable
from orbitmq.broker.pop.records import (
    ACK_TAG,
    BATCH_ACK_TAG,
    CK_TAG,
    REVIVE_TOPIC_PREFIX,
    AckRecord,
    CheckPoint,
    RecordError,
    merge_key,
)
from orbitmq.broker.pop.revive import InFlight
from orbitmq.broker.sqlfilter import ConsumerFilterTable
from orbitmq.broker.stats import BrokerStats
from orbitmq.broker.subscriptions import SubscriptionGroupTable
from orbitmq.broker.topics import TopicTable
from orbitmq.common import extra_info as xi
from orbitmq.common import jsonbody, names
from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExt, MessageExtBrokerInner
from orbitmq.common.names import PERM_READ, PERM_WRITE
from orbitmq.common.record import decode_record, encode_record
from orbitmq.errors import (
    InvalidParameter,
    MessageIllegal,
    NoMessage,
    NoPermission,
    OrbitMQError,
    PollingFull,
    PollingTimeout,
    SubscriptionGroupNotExist,
    SystemError_,
    TopicNotExist,
)
from orbitmq.remoting.pop_headers import PopMessageRequestHeader
from orbitmq.store.api import GetMessageResult, GetMessageStatus, MessageFilter, MessageStore
from orbitmq.store.config_file import load_with_backup, write_atomically

log = logging.getLogger("orbitmq.broker.pop")

REVIVE_GROUP = "CID_RMQ_SYS_REVIVE_GROUP"
REVIVE_QUEUE_NUM = 8
#: The most messages one POP returns.
MAX_POP_NUMS = 32
#: Percent of pops that read the retry topic first.
POP_FROM_RETRY_PROBABILITY = 20
#: Parked POP/NOTIFICATION requests: in total, and on one topic@group@queue key.
MAX_POP_POLLING = 100_000
MAX_POP_POLLING_PER_KEY = 1024
INIT_MODE_MIN = 0
INIT_MODE_MAX = 1
POP_CK = "POP_CK"
FIRST_POP_TIME = "1ST_POP_TIME"
ORDER_INFO_FILE = "consumerOrderInfo.json"
#: Revive retries of a CK whose re-put failed (s): 10, 20, 30, 60, 120 ... as RocketMQ.
_REPUT_BACKOFF_S = (10, 20, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
#: Any dispatch wakes a parked pop (its waiter offset is below every max offset).
_ANY = -1


def revive_topic(cluster: str) -> str:
    return REVIVE_TOPIC_PREFIX + cluster


@dataclass(slots=True)
class PopOutcome:
    """What one POP found: records to send (CommitLog slices or re-encoded copies) and the header values."""

    pop_time: int
    invisible_time: int
    revive_qid: int
    rest_num: int = 0
    buffers: list[memoryview | bytes] = field(default_factory=list)
    #: The extraInfo of each message, parallel to `buffers`.
    handles: list[xi.ExtraInfo] = field(default_factory=list)
    #: Delivery counts of FIFO messages (reconsumeTimes), parallel to `buffers` (0 for others).
    counts: list[int] = field(default_factory=list)
    start_offset_info: list[str] = field(default_factory=list)
    msg_offset_info: list[str] = field(default_factory=list)
    order_count_info: list[str] = field(default_factory=list)
    results: list[GetMessageResult] = field(default_factory=list)

    def release(self) -> None:
        for result in self.results:
            result.release()
        self.results = []


@dataclass(slots=True)
class _Request:
    group: str
    topic: str
    queue_id: int
    max_nums: int
    invisible_time: int
    init_mode: int
    order: bool
    attempt_id: str | None
    message_filter: MessageFilter


class PopService:
    def __init__(
        self,
        *,
        live: LiveConfig,
        topics: TopicTable,
        groups: SubscriptionGroupTable,
        offsets: ConsumerOffsetTable,
        store: MessageStore,
        filters: ConsumerFilterTable,
        clock_ms: Callable[[], int],
        topics_changed: Callable[[], None],
        groups_changed: Callable[[], None],
        stats: BrokerStats | None = None,
    ) -> None:
        self.live = live
        self.topics = topics
        self.groups = groups
        self.offsets = offsets
        self.store = store
        self.filters = filters
        self.clock_ms = clock_ms
        self.topics_changed = topics_changed
        self.groups_changed = groups_changed
        self.stats = stats
        self.revive_topic = revive_topic(live.value.broker_cluster_name)
        self.inflight = InFlight()
        self.orders = OrderTable()
        self.waiters = PullWaiters()
        #: Parked requests per topic@group@queue (POLLING_INFO, POLLING_FULL).
        self.parked: dict[str, int] = {}
        #: POP retry topic -> original topic, for waking pops when a retry arrives.
        self._retry_of: dict[str, str] = {}
        #: topic@group@queue keys a pop is reading now (RocketMQ's try-lock: a busy queue is skipped).
        self._busy: set[str] = set()
        #: Busy keys another pop skipped: its parked requests are woken when the holder is done.
        self._contended: set[str] = set()
        self._revive_rr = 0
        #: Revive queue -> its max offset when each record being written now was started: the
        #: queue's revive offset does not move past those until they are in the table.
        self._pending: dict[int, list[int]] = {}
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._order_path = os.path.join(live.value.store.config_dir, ORDER_INFO_FILE)

    # --- lifecycle --------------------------------------------------------------------------

    async def start(self) -> None:
        """Make the revive topic, load FIFO order info, replay the revive queues, start reviving."""
        if self.revive_topic not in self.topics:
            self.topics.ensure(self.revive_topic, REVIVE_QUEUE_NUM, PERM_READ | PERM_WRITE)
            self.topics_changed()
        loaded = load_with_backup(self._order_path, jsonbody.loads)
        if loaded is not None:
            self.orders.load_json(loaded)
        self._replay()
        self.store.add_dispatch_listener(self.notify)
        self._task = asyncio.ensure_future(self._revive_loop())

    async def close(self) -> None:
        self.waiters.wake_all()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._commit_revive_offsets()
        self._write_orders()

    def _write_orders(self) -> None:
        if self.orders.dirty:
            self.orders.dirty = False
            try:
                write_atomically(self._order_path, jsonbody.dumps_pretty(self.orders.to_json()))
            except OSError as exc:
                self.orders.dirty = True
                log.warning("cannot write %s: %s", self._order_path, exc)

    # --- request checks ---------------------------------------------------------------------

    def _group(self, group: str) -> int:
        """The group's retryMaxTimes; refuses unknown groups and groups that may not consume."""
        known = group in self.groups
        config = self.groups.find_or_create(group)
        if config is None:
            raise SubscriptionGroupNotExist(f"subscription group [{group}] does not exist")
        if not known:
            self.groups_changed()
        if not config.consume_enable:
            raise NoPermission(f"subscription group no permission, {group}")
        return config.retry_max_times

    def _readable_broker(self) -> None:
        config = self.live.value
        if not config.broker_permission & PERM_READ:
            raise NoPermission(f"the broker[{config.advertised_ip}] peeking message is forbidden")

    def _topic(self, topic: str, queue_id: int) -> int:
        """The topic's read queue count; refuses unknown or unreadable topics and queue ids past it."""
        config = self.topics.get(topic)
        if config is None:
            raise TopicNotExist(f"topic[{topic}] not exist, apply first please!")
        if not config.readable:
            raise NoPermission(f"the topic[{topic}] peeking message is forbidden")
        if queue_id >= config.read_queue_nums:
            raise InvalidParameter(
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{config.read_queue_nums}]"
            )
        return config.read_queue_nums

    def _filter(self, group: str, topic: str, exp_type: str | None, exp: str | None) -> MessageFilter:
        subscription: Subscription = subscription_from_expression(topic, exp, exp_type or "TAG", 0)
        return self.filters.filter_for(group, subscription)

    # --- POP ---------------------------------------------------------------------------------

    async def pop(self, header: PopMessageRequestHeader, owner: int = 0) -> PopOutcome:
        """POP_MESSAGE: messages found (SUCCESS), or PollingTimeout / PollingFull once the poll ends."""
        now = self.clock_ms()
        born = header.born_time or now
        if now - born - header.poll_time > 500:
            raise PollingTimeout(f"the broker received the pop too late: bornTime {born}, pollTime {header.poll_time}")
        self._readable_broker()
        if header.max_msg_nums > MAX_POP_NUMS:
            raise InvalidParameter(f"the broker only returns {MAX_POP_NUMS} messages at most, got {header.max_msg_nums}")
        if header.max_msg_nums <= 0:
            raise InvalidParameter(f"maxMsgNums {header.max_msg_nums} must be positive")
        if header.invisible_time <= 0:
            raise InvalidParameter(f"invisibleTime {header.invisible_time} must be positive")
        group, topic = header.consumer_group, header.topic
        queue_id = -1 if header.queue_id < 0 else header.queue_id
        self._topic(topic, queue_id)
        self._group(group)
        exp_type = header.exp_type or "TAG"
        await self.filters.precompile(exp_type, header.exp or "*")
        request = _Request(
            group, topic, queue_id, header.max_msg_nums, header.invisible_time, header.init_mode,
            bool(header.order), header.attempt_id or None, self._filter(group, topic, exp_type, header.exp),
        )
        self._retry_of[xi.pop_retry_topic(group, topic)] = topic
        deadline = born + header.poll_time
        key = f"{topic}@{group}@{queue_id}"
        while True:
            outcome = await self._pop_once(request)
            if outcome.buffers:
                return outcome
            remaining = deadline - 50 - self.clock_ms()
            if header.poll_time <= 0 or remaining <= 0 or self.waiters.closed:
                raise PollingTimeout("no new message")
            if request.order:
                free_at = self._order_free_at(request)
                if free_at is not None:
                    remaining = min(remaining, max(free_at - self.clock_ms(), 1))
            await self._park(key, topic, queue_id, remaining, owner)

    async def _park(self, key: str, topic: str, queue_id: int, remaining_ms: int, owner: int) -> bool:
        total = len(self.waiters)
        if total >= MAX_POP_POLLING or self.parked.get(key, 0) >= MAX_POP_POLLING_PER_KEY:
            raise PollingFull(f"the pop polling queue is full ({total} parked)")
        self.parked[key] = self.parked.get(key, 0) + 1
        try:
            return await self.waiters.wait(topic, queue_id, _ANY, remaining_ms / 1000, owner)
        finally:
            left = self.parked[key] - 1
            if left:
                self.parked[key] = left
            else:
                del self.parked[key]

    def _order_free_at(self, request: _Request) -> int | None:
        """The earliest time a blocked FIFO queue of the request becomes free (wakes the parked pop)."""
        now = self.clock_ms()
        times = []
        for qid in self._queue_ids(request.topic, request.queue_id):
            free = self.orders.blocked_until(request.topic, request.group, qid, now, request.attempt_id)
            if free is not None:
                times.append(free)
        return min(times) if times else None

    def _queue_ids(self, topic: str, queue_id: int) -> list[int]:
        if queue_id >= 0:
            return [queue_id]
        config = self.topics.get(topic)
        return list(range(config.read_queue_nums)) if config is not None else []

    async def _pop_once(self, request: _Request) -> PopOutcome:
        now = self.clock_ms()
        revive_qid = xi.FIFO_REVIVE_QID if request.order else self._next_revive_qid()
        outcome = PopOutcome(pop_time=now, invisible_time=request.invisible_time, revive_qid=revive_qid)
        retry_topic = xi.pop_retry_topic(request.group, request.topic)
        r = random.randrange(100)
        use_retry = not request.order and retry_topic in self.topics
        if use_retry and r < POP_FROM_RETRY_PROBABILITY:
            await self._pop_queue(request, outcome, retry_topic, 0)
        qids = self._queue_ids(request.topic, request.queue_id)
        if request.queue_id < 0 and qids:
            start = r % len(qids)
            qids = qids[start:] + qids[:start]
        for qid in qids:
            if len(outcome.buffers) >= request.max_nums:
                break
            await self._pop_queue(request, outcome, request.topic, qid)
        if use_retry and r >= POP_FROM_RETRY_PROBABILITY and len(outcome.buffers) < request.max_nums:
            await self._pop_queue(request, outcome, retry_topic, 0)
        return outcome

    def _next_revive_qid(self) -> int:
        self._revive_rr = (self._revive_rr + 1) % REVIVE_QUEUE_NUM
        return self._revive_rr

    def _min_offset(self, topic: str, queue_id: int) -> int:
        """The queue's min offset; 0 for a queue the store does not know yet (the store says -1)."""
        return max(self.store.get_min_offset_in_queue(topic, queue_id), 0)

    def _start_offset(self, request: _Request, topic: str, qid: int) -> int:
        offset = self.offsets.query(request.group, topic, qid)
        if offset is not None and offset >= 0:
            return offset
        if names.is_retry_topic(topic) or request.init_mode == INIT_MODE_MIN:
            offset = self._min_offset(topic, qid)
        else:
            max_offset = self.store.get_max_offset_in_queue(topic, qid)
            min_offset = self._min_offset(topic, qid)
            # RocketMQ: a queue still starting at 0 is read from its first message (it is in memory);
            # otherwise from the newest one.
            offset = 0 if min_offset == 0 else max(max_offset - 1, min_offset)
        self.offsets.commit(request.group, topic, qid, offset)
        return offset

    async def _pop_queue(self, request: _Request, outcome: PopOutcome, topic: str, qid: int) -> None:
        lock = f"{topic}@{request.group}@{qid}"
        if lock in self._busy:
            self._contended.add(lock)  # woken when the holder is done, instead of at the end of its poll
            return
        now = outcome.pop_time
        if request.order and self.orders.blocked_until(topic, request.group, qid, now, request.attempt_id):
            return
        self._busy.add(lock)
        try:
            await self._pop_queue_locked(request, outcome, topic, qid)
        finally:
            self._busy.discard(lock)
            if lock in self._contended:
                self._contended.discard(lock)
                self.waiters.notify(request.topic, qid if topic == request.topic else -1, 0)
                self.waiters.notify(request.topic, -1, 0)

    async def _pop_queue_locked(self, request: _Request, outcome: PopOutcome, topic: str, qid: int) -> None:
        want = request.max_nums - len(outcome.buffers)
        offset = self._start_offset(request, topic, qid)
        result = self.store.get_message(request.group, topic, qid, offset, want, request.message_filter)
        if result.status in (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY,
                             GetMessageStatus.OFFSET_FOUND_NULL, GetMessageStatus.NO_MATCHED_LOGIC_QUEUE) \
                and result.next_begin_offset != offset:
            result.release()
            offset = result.next_begin_offset
            self.offsets.commit(request.group, topic, qid, offset)
            result = self.store.get_message(request.group, topic, qid, offset, want, request.message_filter)
        outcome.rest_num += max(result.max_offset - result.next_begin_offset, 0)
        kind = xi.topic_type(topic)
        acked: set[int] = set()
        if request.order:
            acked = self.orders.acked_offsets(topic, request.group, qid)
            keep = [i for i, o in enumerate(result.queue_offsets) if o not in acked]
        else:
            keep = list(range(result.message_count))
        if not keep:
            if result.next_begin_offset > offset and not request.order:
                self.offsets.commit(request.group, topic, qid, result.next_begin_offset)  # all filtered out
            elif request.order and result.message_count:
                self.offsets.commit(request.group, topic, qid, result.next_begin_offset)
            result.release()
            return
        queue_offsets = [result.queue_offsets[i] for i in keep]
        broker_name = self.live.value.broker_name
        if request.order:
            read = result.queue_offsets[: keep[-1] + 1]
            counts = self.orders.update(
                topic, request.group, qid, outcome.pop_time, request.invisible_time, read,
                request.attempt_id, outcome.pop_time, frozenset(o for o in read if o in acked),
            )
            ck_start = queue_offsets[0]
            if offset != ck_start:
                self.offsets.commit(request.group, topic, qid, ck_start)
            outcome.order_count_info.extend(xi.order_count_entries(kind, qid, list(zip(queue_offsets, counts))))
        else:
            counts = [0] * len(queue_offsets)
            ck_start = offset
            ck = CheckPoint(
                topic=topic, group=request.group, queue_id=qid, start_offset=ck_start, pop_time=outcome.pop_time,
                invisible_time=request.invisible_time, revive_qid=outcome.revive_qid, broker_name=broker_name,
                deltas=[o - ck_start for o in queue_offsets],
            )
            if not await self._store_ck(ck):
                result.release()
                return
            self.offsets.commit(request.group, topic, qid, result.next_begin_offset)
        outcome.start_offset_info.append(xi.start_offset_entry(kind, qid, ck_start))
        outcome.msg_offset_info.append(xi.msg_offset_entry(kind, qid, queue_offsets))
        for index, queue_offset, count in zip(keep, queue_offsets, counts, strict=True):
            handle = xi.ExtraInfo(
                ck_start, outcome.pop_time, request.invisible_time, outcome.revive_qid, kind, broker_name, qid,
                queue_offset,
            )
            buffer = result.buffers[index]
            if kind:
                outcome.buffers.append(self._reencode(buffer, request.topic, handle))
            elif count:
                # A FIFO redelivery carries its count as reconsumeTimes (what clients set from orderCountInfo).
                outcome.buffers.append(self._reencode(buffer, request.topic, None, count))
            else:
                outcome.buffers.append(buffer)
            outcome.handles.append(handle)
            outcome.counts.append(count)
        outcome.results.append(result)
        if self.stats is not None:
            self.stats.record_get(request.group, topic, len(keep), result.buffer_total_size, qid,
                                  result.next_begin_offset)

    @staticmethod
    def _reencode(buffer: memoryview, topic: str, handle: xi.ExtraInfo | None, reconsume: int = -1) -> bytes:
        """A record shown under `topic`: a retry-topic one with its extraInfo in POP_CK, a FIFO
        redelivery with its delivery count as reconsumeTimes."""
        msg = decode_record(buffer, decompress=False)
        props = dict(msg.properties)
        if handle is not None:
            props.setdefault(POP_CK, str(handle))
        return encode_record(
            topic=topic.encode(), body=msg.body, properties=mc.encode_properties(props).encode(),
            queue_id=msg.queue_id, flag=msg.flag, queue_offset=msg.queue_offset,
            physical_offset=msg.commit_log_offset, sys_flag=msg.sys_flag, born_timestamp=msg.born_timestamp,
            born_host=msg.born_host, store_timestamp=msg.store_timestamp, store_host=msg.store_host,
            reconsume_times=msg.reconsume_times if reconsume < 0 else reconsume,
            prepared_transaction_offset=msg.prepared_transaction_offset,
        )

    # --- revive-topic records ----------------------------------------------------------------

    async def _put_revive(self, revive_qid: int, tag: str, body: bytes, keys: str) -> int | None:
        """Store one revive-topic record; its queue offset, or None when the store refused it."""
        config = self.live.value
        msg = MessageExtBrokerInner(
            self.revive_topic, body, 0, {mc.TAGS: tag, mc.KEYS: keys}, queue_id=revive_qid,
            born_timestamp=self.clock_ms(), born_host=config.broker_addr, store_host=config.broker_addr,
            tags_code=tag_hash_code(tag),
        )
        msg.refresh_properties_string()
        # Until this record is in the table, the queue's revive offset stays at or before it.
        pending = self._pending.setdefault(revive_qid, [])
        mark = self.store.get_max_offset_in_queue(self.revive_topic, revive_qid)
        pending.append(mark)
        try:
            result = await self.store.put_message(msg)
        finally:
            pending.remove(mark)
        if not result.is_ok or result.append_result is None:
            log.warning("revive record %s not stored: %s %s", tag, result.status.value, result.remark)
            return None
        return result.append_result.logics_offset

    async def _store_ck(self, ck: CheckPoint) -> bool:
        keys = f"{ck.topic}@{ck.queue_id}@{ck.start_offset}@{ck.group}@{ck.pop_time}@{ck.broker_name}@ck"
        offset = await self._put_revive(ck.revive_qid, CK_TAG, ck.encode(), keys)
        if offset is None:
            return False
        ck.revive_offset = offset
        self.inflight.add(ck)  # no await since the put returned: the revive offset cannot pass it
        self._wake.set()
        return True

    async def _store_ack(self, ack: AckRecord, revive_qid: int) -> bool:
        keys = f"{ack.topic}@{ack.queue_id}@{ack.ack_offsets[0]}@{ack.group}@{ack.pop_time}@{ack.broker_name}@ack"
        return await self._put_revive(revive_qid, ack.tag, ack.encode(), keys) is not None

    # --- ACK / CHANGE_MESSAGE_INVISIBLETIME ----------------------------------------------------

    def _check_ack_target(self, topic: str, queue_id: int, offset: int, end_inclusive: bool) -> None:
        config = self.topics.get(topic)
        if config is None:
            raise TopicNotExist(f"topic[{topic}] not exist, apply first please!")
        if queue_id < 0 or queue_id >= config.read_queue_nums:
            raise MessageIllegal(
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{config.read_queue_nums}]"
            )
        min_offset = self._min_offset(topic, queue_id)
        max_offset = self.store.get_max_offset_in_queue(topic, queue_id)
        if offset < min_offset or offset > max_offset or (offset == max_offset and not end_inclusive):
            raise NoMessage(f"offset is illegal, key:{topic}@{queue_id}, commit:{offset}, min:{min_offset}, "
                            f"max:{max_offset}")

    @staticmethod
    def _extra(text: str) -> xi.ExtraInfo:
        try:
            return xi.parse_extra_info(text)
        except xi.ExtraInfoError as exc:
            raise MessageIllegal(str(exc)) from None

    async def ack(self, group: str, topic: str, queue_id: int, offset: int, extra_info: str) -> None:
        """ACK_MESSAGE. `topic` is the real topic. A stale or repeated ack is accepted and does nothing."""
        self._check_ack_target(topic, queue_id, offset, end_inclusive=True)
        info = self._extra(extra_info)
        await self._ack(group, topic, queue_id, [offset], info.ck_offset, info.pop_time, info.revive_qid,
                        info.broker_name)

    async def _ack(
        self, group: str, topic: str, queue_id: int, offsets: list[int], ck_offset: int, pop_time: int,
        revive_qid: int, broker_name: str,
    ) -> None:
        if revive_qid == xi.FIFO_REVIVE_QID:
            for offset in offsets:
                self._ack_order(group, topic, queue_id, offset, pop_time)
            return
        key = merge_key(topic, group, queue_id, ck_offset, pop_time, broker_name)
        open_offsets = [o for o in offsets if self.inflight.is_open(key, o)]
        if not open_offsets or not 0 <= revive_qid < REVIVE_QUEUE_NUM:
            return  # revived already, acked already, or not a handle of this broker: RocketMQ answers SUCCESS
        ack = AckRecord(topic, group, queue_id, ck_offset, pop_time, broker_name, open_offsets)
        if not await self._store_ack(ack, revive_qid):
            raise SystemError_("the ack could not be stored")
        self.inflight.ack(key, open_offsets)

    def _ack_order(self, group: str, topic: str, queue_id: int, offset: int, pop_time: int) -> None:
        committed = self.offsets.query(group, topic, queue_id)
        if committed is not None and offset < committed:
            return
        new_offset = self.orders.ack(topic, group, queue_id, offset, pop_time, self.clock_ms())
        if new_offset is None:
            return
        self.offsets.commit(group, topic, queue_id, new_offset)
        info = self.orders.get(topic, group, queue_id)
        if info is not None and info.blocked_until(self.clock_ms(), None) is None:
            self.waiters.notify(topic, queue_id, 0)
            self.waiters.notify(topic, -1, 0)

    async def batch_ack(self, body: bytes) -> None:
        """BATCH_ACK_MESSAGE."""
        from orbitmq.broker.pop.records import parse_batch_ack_body

        try:
            entries = parse_batch_ack_body(body)
        except RecordError as exc:
            raise MessageIllegal(str(exc)) from None
        if not entries:
            raise NoMessage("the batch ack body holds no ack")
        broker_name = self.live.value.broker_name
        for entry in entries:
            topic = xi.real_topic(entry.retry, entry.topic, entry.group)
            if topic not in self.topics or not entry.offsets:
                continue
            await self._ack(entry.group, topic, entry.queue_id, list(entry.offsets), entry.start_offset,
                            entry.pop_time, entry.revive_qid, broker_name)

    async def change_invisible(
        self, group: str, topic: str, queue_id: int, offset: int, extra_info: str, invisible_time: int
    ) -> tuple[int, int, int]:
        """CHANGE_MESSAGE_INVISIBLETIME: (popTime, invisibleTime, reviveQid) of the new handle."""
        self._check_ack_target(topic, queue_id, offset, end_inclusive=False)
        info = self._extra(extra_info)
        if invisible_time < 0:
            raise InvalidParameter(f"invisibleTime {invisible_time} must not be negative")
        now = self.clock_ms()
        if info.is_fifo:
            next_visible = now + invisible_time
            self.orders.change_invisible(topic, group, queue_id, offset, info.pop_time, next_visible, now)
            return info.pop_time, next_visible - info.pop_time, info.revive_qid
        revive_qid = info.revive_qid if 0 <= info.revive_qid < REVIVE_QUEUE_NUM else self._next_revive_qid()
        ck = CheckPoint(
            topic=topic, group=group, queue_id=queue_id, start_offset=offset, pop_time=now,
            invisible_time=invisible_time, revive_qid=revive_qid, broker_name=self.live.value.broker_name,
            deltas=[0],
        )
        if not await self._store_ck(ck):
            raise SystemError_("the new checkpoint could not be stored")
        try:
            await self._ack(group, topic, queue_id, [offset], info.ck_offset, info.pop_time, info.revive_qid,
                            info.broker_name)
        except SystemError_:
            log.warning("the old handle of %s@%d offset %d stays un-acked", topic, queue_id, offset)
        return now, invisible_time, revive_qid

    # --- PEEK / NOTIFICATION / POLLING_INFO ------------------------------------------------------

    def peek(self, group: str, topic: str, queue_id: int, max_nums: int) -> tuple[list[GetMessageResult], int]:
        """PEEK_MESSAGE: what a pop would read, without state changes. (results, restNum)."""
        self._readable_broker()
        if max_nums > MAX_POP_NUMS or max_nums <= 0:
            raise InvalidParameter(f"maxMsgNums must be 1 to {MAX_POP_NUMS}, got {max_nums}")
        self._topic(topic, queue_id)
        self._group(group)
        targets = [(topic, q) for q in self._queue_ids(topic, -1 if queue_id < 0 else queue_id)]
        retry = xi.pop_retry_topic(group, topic)
        if retry in self.topics:
            targets.insert(0 if random.randrange(5) == 0 else len(targets), (retry, 0))
        results: list[GetMessageResult] = []
        rest = 0
        left = max_nums
        for real, qid in targets:
            if left <= 0:
                break
            offset = self.offsets.query(group, real, qid)
            if offset is None:
                offset = self._min_offset(real, qid)
            result = self.store.get_message(group, real, qid, offset, left, None)
            rest += max(result.max_offset - result.next_begin_offset, 0)
            if result.message_count:
                left -= result.message_count
                results.append(result)
            else:
                result.release()
        return results, rest

    def has_message(self, group: str, topic: str, queue_id: int, order: bool, attempt_id: str | None) -> bool:
        now = self.clock_ms()
        targets = [(topic, q) for q in self._queue_ids(topic, queue_id)]
        retry = xi.pop_retry_topic(group, topic)
        if not order and retry in self.topics:
            targets.append((retry, 0))
        for real, qid in targets:
            if order and self.orders.blocked_until(real, group, qid, now, attempt_id) is not None:
                continue
            offset = self.offsets.query(group, real, qid)
            start = offset if offset is not None else self._min_offset(real, qid)
            if self.store.get_max_offset_in_queue(real, qid) > start:
                return True
        return False

    async def notification(
        self, group: str, topic: str, queue_id: int, poll_time: int, born_time: int, order: bool,
        attempt_id: str | None, owner: int = 0,
    ) -> tuple[bool, bool]:
        """NOTIFICATION: (hasMsg, pollingFull), parking up to pollTime when nothing is there."""
        self._readable_broker()
        queue_id = -1 if queue_id < 0 else queue_id
        self._topic(topic, queue_id)
        self._group(group)
        self._retry_of[xi.pop_retry_topic(group, topic)] = topic
        deadline = (born_time or self.clock_ms()) + poll_time
        key = f"{topic}@{group}@{queue_id}"
        while True:
            if self.has_message(group, topic, queue_id, order, attempt_id):
                return True, False
            remaining = deadline - 50 - self.clock_ms()
            if poll_time <= 0 or remaining <= 0 or self.waiters.closed:
                return False, False
            try:
                await self._park(key, topic, queue_id, remaining, owner)
            except PollingFull:
                return False, True

    def polling_num(self, group: str, topic: str, queue_id: int) -> int:
        return self.parked.get(f"{topic}@{group}@{-1 if queue_id < 0 else queue_id}", 0)

    # --- long-poll wake-ups -----------------------------------------------------------------------

    def notify(self, topic: str, queue_id: int, max_offset: int) -> None:
        """Store dispatch listener: wake pops parked on the topic (a retry topic wakes its original topic)."""
        original = self._retry_of.get(topic)
        if original is not None:
            self.waiters.notify(original, -1, max_offset)
            for qid in self._queue_ids(original, -1):
                self.waiters.notify(original, qid, max_offset)
            return
        self.waiters.notify(topic, queue_id, max_offset)
        self.waiters.notify(topic, -1, max_offset)

    # --- revive ------------------------------------------------------------------------------------

    async def _revive_loop(self) -> None:
        while True:
            try:
                await self.revive_due()
            except asyncio.CancelledError:
                raise
            except Exception:  # a failing round must not stop reviving
                log.exception("revive round failed")
            next_due = self.inflight.next_due()
            wait_ms = 1000 if next_due is None else min(max(next_due - self.clock_ms(), 20), 1000)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), wait_ms / 1000)
            except TimeoutError:
                pass

    async def revive_due(self) -> int:
        """Revive every CK whose time has come; the number of messages re-put."""
        moved = 0
        for ck in self.inflight.due(self.clock_ms()):
            try:
                moved += await self._revive(ck)
            except Exception:  # one CK's failure must neither stop the round nor drop that CK
                log.exception("revive of %s@%d from offset %d failed", ck.topic, ck.queue_id, ck.start_offset)
                ck.re_put += 1
                step = _REPUT_BACKOFF_S[min(ck.re_put - 1, len(_REPUT_BACKOFF_S) - 1)]
                self.inflight.postpone(ck, self.clock_ms() + step * 1000)
        self._commit_revive_offsets()
        self._write_orders()
        return moved

    async def _revive(self, ck: CheckPoint) -> int:
        open_offsets = ck.open_offsets()
        revived: list[int] = []
        for offset in open_offsets:
            msg = self._load(ck.topic, ck.queue_id, offset)
            if msg is None:
                revived.append(offset)  # gone from the store: nothing to bring back
                continue
            if not self.inflight.is_open(ck.key, offset):
                continue  # acked while this round ran
            if not await self._reput(ck, msg):
                ck.re_put += 1
                step = _REPUT_BACKOFF_S[min(ck.re_put - 1, len(_REPUT_BACKOFF_S) - 1)]
                if revived:
                    await self._settle_offsets(ck, revived)
                self.inflight.postpone(ck, self.clock_ms() + step * 1000)
                return len(revived)
            revived.append(offset)
        await self._settle_offsets(ck, revived)
        self.inflight.settle(ck)
        return len(revived)

    async def _settle_offsets(self, ck: CheckPoint, offsets: list[int]) -> None:
        """A bAck record for offsets brought back, so that a replay does not bring them back again."""
        if offsets:
            ack = AckRecord(ck.topic, ck.group, ck.queue_id, ck.start_offset, ck.pop_time, ck.broker_name,
                            list(offsets))
            if not await self._store_ack(ack, ck.revive_qid):
                log.warning("revived offsets of %s@%d not recorded; a restart may bring them back again",
                            ck.topic, ck.queue_id)
            self.inflight.ack(ck.key, offsets)

    def _load(self, topic: str, queue_id: int, offset: int) -> MessageExt | None:
        result = self.store.get_message(REVIVE_GROUP, topic, queue_id, offset, 1, None)
        try:
            if result.status is not GetMessageStatus.FOUND or not result.buffers:
                return None
            try:
                return decode_record(result.buffers[0], decompress=False)
            except OrbitMQError:
                return None
        finally:
            result.release()

    async def _reput(self, ck: CheckPoint, msg: MessageExt) -> bool:
        """Write `msg` again to the POP retry topic with one more reconsume time, or to the DLQ."""
        config = self.live.value
        group_config = self.groups.get(ck.group)
        max_times = group_config.retry_max_times if group_config is not None else 16
        props = dict(msg.properties)
        props.pop(POP_CK, None)
        props.pop(mc.DELAY_TIME_LEVEL, None)
        if msg.reconsume_times == 0 or FIRST_POP_TIME not in props:
            props[FIRST_POP_TIME] = str(ck.pop_time)
        if names.is_retry_topic(ck.topic):
            original = props.get(mc.RETRY_TOPIC) or self._retry_of.get(ck.topic, ck.topic)
        else:
            original = ck.topic
            props.setdefault(mc.RETRY_TOPIC, ck.topic)
        if msg.reconsume_times + 1 > max_times:
            target = names.dlq_topic(ck.group)
            props.setdefault(mc.ORIGIN_MESSAGE_ID, msg.msg_id)
        else:
            target = ck.topic if names.is_retry_topic(ck.topic) else xi.pop_retry_topic(ck.group, ck.topic)
            self._retry_of[target] = original
        if target not in self.topics:
            problem = names.validate_topic(target)
            if problem:  # e.g. group and topic too long together: kept in its CK, tried again later
                log.warning("cannot revive %s@%d offset %d: %s", ck.topic, ck.queue_id, msg.queue_offset, problem)
                return False
            self.topics.ensure(target, 1, PERM_READ | PERM_WRITE)
            self.topics_changed()
            if not names.is_dlq_topic(target) and self.offsets.query(ck.group, target, 0) is None:
                self.offsets.commit(ck.group, target, 0, self.store.get_max_offset_in_queue(target, 0))
        copy = MessageExtBrokerInner(
            target, msg.body, msg.flag, props, queue_id=0, sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp, born_host=msg.born_host, store_host=config.broker_addr,
            reconsume_times=msg.reconsume_times + 1, tags_code=tag_hash_code(props.get(mc.TAGS)),
        )
        copy.refresh_properties_string()
        result = await self.store.put_message(copy)
        if not result.is_ok:
            log.warning("revive of %s@%d offset %d to %s failed: %s", ck.topic, ck.queue_id, msg.queue_offset,
                        target, result.status.value)
            return False
        if names.is_dlq_topic(target) and self.stats is not None:
            self.stats.record_dlq(ck.group, original)
        return True

    def _commit_revive_offsets(self) -> None:
        for qid in range(REVIVE_QUEUE_NUM):
            end = min(self._pending.get(qid) or [self.store.get_max_offset_in_queue(self.revive_topic, qid)])
            self.offsets.commit(REVIVE_GROUP, self.revive_topic, qid, self.inflight.revive_offset(qid, end))

    # --- recovery -------------------------------------------------------------------------------

    def _replay(self) -> None:
        """Rebuild the in-flight table from each revive queue's revive offset on."""
        cks = acks = 0
        for qid in range(REVIVE_QUEUE_NUM):
            offset = self.offsets.query(REVIVE_GROUP, self.revive_topic, qid)
            if offset is None:
                offset = self._min_offset(self.revive_topic, qid)
            while True:
                result = self.store.get_message(REVIVE_GROUP, self.revive_topic, qid, offset, 32, None)
                try:
                    for buffer, queue_offset in zip(result.buffers, result.queue_offsets, strict=True):
                        kind = self._replay_record(buffer, qid, queue_offset)
                        cks += kind == CK_TAG
                        acks += kind in (ACK_TAG, BATCH_ACK_TAG)
                    if result.next_begin_offset <= offset:
                        break
                    offset = result.next_begin_offset
                finally:
                    result.release()
        if cks or acks:
            log.info("pop: replayed %d checkpoints and %d acks, %d checkpoints open", cks, acks, len(self.inflight))

    def _replay_record(self, buffer: memoryview, qid: int, queue_offset: int) -> str | None:
        try:
            msg = decode_record(buffer)
            tag = msg.properties.get(mc.TAGS)
            body = jsonbody.loads(msg.body)
            if tag == CK_TAG:
                ck = CheckPoint.from_json(body, qid)
                ck.revive_offset = queue_offset
                self.inflight.add(ck)
                end = ck.start_offset + ck.deltas[-1] + 1
                committed = self.offsets.query(ck.group, ck.topic, ck.queue_id)
                if committed is None or committed < end:
                    # Pops after the last offsets flush: their CK proves the offset had moved.
                    self.offsets.commit(ck.group, ck.topic, ck.queue_id, end)
            elif tag in (ACK_TAG, BATCH_ACK_TAG):
                ack = AckRecord.from_json(body)
                self.inflight.ack(ack.key, ack.ack_offsets)
            return tag
        except (OrbitMQError, RecordError, ValueError) as exc:
            log.warning("revive queue %d offset %d: unreadable record skipped (%s)", qid, queue_offset, exc)
            return None
