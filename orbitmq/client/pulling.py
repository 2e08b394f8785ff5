"""Pulling and returning messages, shared by the push, pull and lite-pull consumers.

`PullHelper.pull` picks the broker (the one the last answer suggested, else
the master), sends PULL_MESSAGE, drops messages whose tag does not match the
subscription (the broker filtered by hash code only), and stamps MIN_OFFSET /
MAX_OFFSET on each message as the Java client does.

`PullHelper.send_back` returns a failed message: CONSUMER_SEND_MSG_BACK to
the broker it came from, else a copy sent to `%RETRY%<group>` by the
instance's internal producer (§6.7). A broker that does not support
send-back at all gets neither; the consumer keeps the message and consumes
it again itself.
"""

from __future__ import annotations

import logging
import time
from dataclasses import replace

from orbitmq.client.config import ConsumeFromWhere, ConsumerConfig
from orbitmq.client.instance import ClientInstance, InnerProducerFactory, broker_gone
from orbitmq.client.lookups import Lookups
from orbitmq.client.offset_store import OFFSET_NOT_FOUND, OffsetStore, ReadOffsetType
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import PullResult, PullStatus
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.filter import SubscriptionData
from orbitmq.common.message import MessageExt
from orbitmq.errors import BrokerError, ClientError, RemotingError

log = logging.getLogger(__name__)

SEND_BACK_TIMEOUT_S = 5.0
#: RocketMQ's default delay levels in ms (messageDelayLevel), level 1 first.
DEFAULT_LEVELS_MS = (1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 180_000, 240_000, 300_000, 360_000, 420_000,
                     480_000, 540_000, 600_000, 1_200_000, 1_800_000, 3_600_000, 7_200_000)


def level_for_ms(delay_ms: int) -> int:
    """The first default delay level at least `delay_ms` long (the last one for longer delays)."""
    for level, ms in enumerate(DEFAULT_LEVELS_MS, start=1):
        if ms >= delay_ms:
            return level
    return len(DEFAULT_LEVELS_MS)


def _int(text: str | None) -> int:
    try:
        return int(text) if text else 0
    except ValueError:
        return 0
REQUEST_CODE_NOT_SUPPORTED = 3


async def compute_pull_from_where(
    config: ConsumerConfig, offset_store: OffsetStore, lookups: Lookups, mq: MessageQueue
) -> int:
    """Where a newly taken queue starts: the stored offset, else as consume_from_where says (§6.5).

    -1 means "cannot tell now" (the broker could not be asked); the caller retries later.
    """
    stored = await offset_store.read_offset(mq, ReadOffsetType.STORE)
    if stored >= 0:
        return stored
    if stored != OFFSET_NOT_FOUND:
        return -1
    where = config.consume_from_where
    is_retry = names.is_retry_topic(mq.topic)
    try:
        if where is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
            return 0
        if where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET:
            return 0 if is_retry else await lookups.max_offset(mq)
        if is_retry:
            return await lookups.max_offset(mq)
        when = time.mktime(time.strptime(config.consume_timestamp, "%Y%m%d%H%M%S"))
        return await lookups.search_offset(mq, int(when * 1000))
    except (RemotingError, BrokerError, ClientError) as exc:
        log.warning("cannot compute the start offset of %s: %s", mq, exc)
        return -1


class BrokerOffsets:
    """The OffsetBroker calls of a remote offset store, addressed to each queue's master, or to
    its slave while the master is down (RemoteBrokerOffsetStore with findBrokerAddressInAdmin)."""

    def __init__(self, instance: ClientInstance) -> None:
        self.instance = instance

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int:
        try:
            addr = await self.instance.find_broker_addr_in_admin(mq.broker_name, mq.topic)
            return await self.instance.api.query_consumer_offset(addr, group, mq)
        except (RemotingError, BrokerError, ClientError) as exc:
            self.instance.failed_over(mq.topic, exc)
            raise

    async def update_consumer_offset(self, group: str, mq: MessageQueue, offset: int, oneway: bool) -> None:
        try:
            addr = await self.instance.find_broker_addr_in_admin(mq.broker_name, mq.topic)
            await self.instance.api.update_consumer_offset(addr, group, mq, offset, oneway)
        except (RemotingError, BrokerError, ClientError) as exc:
            self.instance.failed_over(mq.topic, exc)
            raise


#: The longest a pull parks on a slave while its group has no master in the route.
MASTERLESS_SUSPEND_MS = 1000


class PullHelper:
    def __init__(self, instance: ClientInstance, group: str, start_inner_producer: InnerProducerFactory) -> None:
        self.instance = instance
        self.group = group
        #: Starts the instance's inner producer the first time a send-back must fall back to it.
        self.start_inner_producer = start_inner_producer
        self._suggested: dict[MessageQueue, int] = {}

    async def pull(
        self,
        mq: MessageQueue,
        sd: SubscriptionData,
        offset: int,
        max_nums: int,
        sys_flag: int,
        commit_offset: int,
        suspend_ms: int,
        timeout_s: float,
        *,
        send_expression: bool,
    ) -> PullResult:
        addr = self.instance.broker_addr(mq.broker_name, self._suggested.get(mq, 0))
        if addr is None:
            await self.instance.update_route(mq.topic)
            addr = self.instance.broker_addr(mq.broker_name)
        if addr is None:
            self.instance.refresh_route_soon(mq.topic)
            raise ClientError(f"The broker[{mq.broker_name}] not exist")
        if self.instance.master_addr(mq.broker_name) is None:
            # No master in the route (its group is failing over): read from the slave in short
            # polls and keep looking the route up, so the next pull reaches the new master as soon
            # as it registers instead of after a whole parked poll or the next periodic route poll.
            self.instance.refresh_route_soon(mq.topic)
            suspend_ms = min(suspend_ms, MASTERLESS_SUSPEND_MS)
        try:
            result = await self.instance.api.pull(
                addr, mq, group=self.group, offset=offset, max_nums=max_nums, sys_flag=sys_flag,
                commit_offset=commit_offset, suspend_ms=suspend_ms,
                sub_expression=sd.sub_string if send_expression else None, sub_version=sd.sub_version,
                expression_type=sd.expression_type, timeout=timeout_s,
            )
        except (RemotingError, BrokerError) as exc:
            if broker_gone(exc):
                # The broker is gone or not serving (failover): the next pull asks the group's
                # master as the fresh route names it, or a slave while there is none.
                self._suggested.pop(mq, None)
                self.instance.refresh_route_soon(mq.topic)
            raise
        self._suggested[mq] = result.suggest_which_broker_id
        if result.status is PullStatus.FOUND:
            low, high = str(result.min_offset), str(result.max_offset)
            kept = []
            for msg in result.messages:
                if sd.matches_tag(msg.tags):
                    msg.properties[mc.MIN_OFFSET] = low
                    msg.properties[mc.MAX_OFFSET] = high
                    kept.append(msg)
            result = replace(result, messages=kept)
        return result

    async def send_back(
        self, msg: MessageExt, mq: MessageQueue, *, delay_level: int, max_reconsume: int, delay_ms: int | None = None,
    ) -> bool:
        """Return `msg` for redelivery (or to the DLQ with delay level -1); False if nothing worked.

        `delay_ms` asks for an exact wait (the broker's timer); the level sent along is the first
        of RocketMQ's default levels at least that long, for brokers without OrbitMQ's field. The
        message's ORBITMQ_LAST_ERROR and its attempt count go along too.
        """
        addr = self.instance.master_addr(mq.broker_name) or msg.store_host
        if delay_ms is not None and delay_level >= 0:
            delay_ms = max(0, delay_ms)
            delay_level = level_for_ms(delay_ms)
        else:
            delay_ms = None
        error = msg.properties.get(mc.ORBITMQ_LAST_ERROR)
        attempts = max(msg.reconsume_times + 1, _int(msg.properties.get(mc.ORBITMQ_ATTEMPTS)))
        try:
            await self.instance.api.consumer_send_back(
                addr, mq.broker_name, msg, self.group, delay_level, max_reconsume, SEND_BACK_TIMEOUT_S,
                delay_ms=delay_ms, last_error=mc.error_text(error) if error else None, attempts=attempts)
            return True
        except BrokerError as exc:
            if exc.code == REQUEST_CODE_NOT_SUPPORTED:
                # A broker without retry topics: the caller consumes the message again locally. A copy
                # with a delay level would sit in the schedule topic of a broker that never delivers it.
                log.info("broker does not take messages back; %s will be consumed again locally", msg.msg_id)
                return False
            log.warning("send-back of %s failed (%s); resending it to the retry topic", msg.msg_id, exc)
        except RemotingError as exc:
            log.warning("send-back of %s failed (%s); resending it to the retry topic", msg.msg_id, exc)
        try:
            producer = await self.instance.inner_producer(self.start_inner_producer)
            await producer.send(self._retry_copy(msg, delay_level, max_reconsume, delay_ms, attempts))
            return True
        except (BrokerError, RemotingError, ClientError) as exc:
            log.warning("resending %s to the retry topic failed: %s", msg.msg_id, exc)
            return False

    def _retry_copy(
        self, msg: MessageExt, delay_level: int, max_reconsume: int, delay_ms: int | None = None, attempts: int = 0,
    ) -> MessageExt:
        props = dict(msg.properties)
        if mc.ORBITMQ_LAST_ERROR in props:
            props[mc.ORBITMQ_LAST_ERROR] = mc.error_text(props[mc.ORBITMQ_LAST_ERROR])
        if attempts > 0:
            props[mc.ORBITMQ_ATTEMPTS] = str(attempts)
        props.setdefault(mc.RETRY_TOPIC, msg.topic)
        props.setdefault(mc.ORIGIN_MESSAGE_ID, msg.msg_id)
        props[mc.RECONSUME_TIME] = str(msg.reconsume_times + 1)
        props[mc.MAX_RECONSUME_TIMES] = str(max_reconsume)
        props.pop(mc.TRANSACTION_PREPARED, None)
        props.pop(mc.MIN_OFFSET, None)
        props.pop(mc.MAX_OFFSET, None)
        props[mc.DELAY_TIME_LEVEL] = str(3 + msg.reconsume_times) if delay_level >= 0 else "0"
        if delay_level < 0:
            props.pop(mc.DELAY_TIME_LEVEL, None)
        elif delay_ms is not None:
            props[mc.DELAY_TIME_LEVEL] = str(delay_level)
            props[mc.TIMER_DELAY_MS] = str(delay_ms)  # a broker with a timer serves this one
        return MessageExt(topic=names.retry_topic(self.group), body=msg.body, flag=msg.flag, properties=props)
