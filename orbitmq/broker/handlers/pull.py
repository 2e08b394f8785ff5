"""PULL_MESSAGE (11): reads with the broker-side filter, long polling and offset commits.

The subscription comes from the group's heartbeat, or from the request when
its SUBSCRIPTION flag is set. TAG subscriptions filter by the tag hash codes
kept in the ConsumeQueue; SQL92 ones evaluate the selector on the record's
properties. A pull that finds nothing new and carries the SUSPEND flag waits
(up to its suspendTimeoutMillis) until the store dispatches a message to its
queue, then reads again: exactly one response per pull. The response body is
the list of CommitLog slices the store returned, written out unjoined; the
slices are released after the write.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.consumers import ConsumerRegistry, Subscription
from orbitmq.broker.expiry import (
    EXPIRED_POLICY_ATTRIBUTE,
    EXPIRED_PROPERTY,
    POLICY_DLQ,
    TOPIC_TTL_ATTRIBUTE,
    ExpiryCounter,
    ExpiryFilter,
    topic_ttl,
)
from orbitmq.broker.handlers.fields import (
    MAX_OFFSET,
    Registry,
    group_field,
    integer,
    optional_text,
    topic_field,
)
from orbitmq.broker.handlers.query import release_after_write
from orbitmq.broker.longpoll import PullWaiters
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.sqlfilter import ConsumerFilterTable
from orbitmq.broker.stats import BrokerStats
from orbitmq.broker.subcache import BoundedCache, expression_too_long, text_size
from orbitmq.broker.subscriptions import SubscriptionGroupTable
from orbitmq.broker.topics import TopicTable
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.hashing import java_string_hash, tag_hash_code
from orbitmq.common.message import MessageExt, MessageExtBrokerInner
from orbitmq.common.names import PERM_READ, PERM_WRITE
from orbitmq.errors import (
    NoPermission,
    SubscriptionGroupNotExist,
    SubscriptionNotExist,
    SubscriptionNotLatest,
    SubscriptionParseFailed,
    SystemBusy,
    SystemError_,
    TopicNotExist,
)
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.headers import PullMessageResponseHeader
from orbitmq.remoting.sysflag import PullSysFlag
from orbitmq.store.api import GetMessageResult, GetMessageStatus, MessageFilter, MessageStore
from orbitmq.store.config import BrokerRole

#: A waiter offset no dispatch reaches: short polling parks for its whole time.
NEVER_WOKEN = 1 << 63

log = logging.getLogger("orbitmq.broker.pull")


def _int32(value: int) -> int:
    v = value & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def subscription_from_expression(topic: str, expression: str | None, expression_type: str, version: int) -> Subscription:
    """Build a subscription from a pull's own expression (`TagA || TagB`, `*`, or SQL92 text)."""
    expression = (expression or "*").strip() or "*"
    too_long = expression_too_long(expression)
    if too_long:
        raise SubscriptionParseFailed(too_long)
    if expression_type.upper() == "SQL92":
        return Subscription(topic, expression, sub_version=version, expression_type="SQL92")
    if expression == "*":
        return Subscription(topic, "*", sub_version=version)
    tags = tuple(t.strip() for t in expression.split("||") if t.strip())
    if not tags:
        raise SubscriptionParseFailed(f"parse the consumer's subscription[{expression}] failed")
    codes = frozenset(_int32(java_string_hash(t)) for t in tags)
    return Subscription(topic, expression, tags, codes, version)


def subscription_size(subscription: Subscription) -> int:
    """Estimated bytes a parsed subscription holds (its text, tags and hash codes)."""
    tags = subscription.tags_set
    return (
        text_size(subscription.topic)
        + text_size(subscription.sub_string)
        + sys.getsizeof(tags) + sum(text_size(t) for t in tags)
        + sys.getsizeof(subscription.code_set) + 32 * len(subscription.code_set)
    )


#: GetMessageStatus -> response code for statuses whose code does not depend on the offset.
_CODE_BY_STATUS = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


def response_code(result: GetMessageResult, requested_offset: int) -> int:
    """§3.2's table: store status -> response code."""
    if result.status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
        return ResponseCode.PULL_OFFSET_MOVED if requested_offset != 0 else ResponseCode.PULL_NOT_FOUND
    return _CODE_BY_STATUS[result.status]


class PullHandler:
    def __init__(
        self,
        *,
        live: LiveConfig,
        topics: TopicTable,
        groups: SubscriptionGroupTable,
        consumers: ConsumerRegistry,
        offsets: ConsumerOffsetTable,
        store: MessageStore,
        waiters: PullWaiters,
        groups_changed: Callable[[], None],
        stats: BrokerStats | None = None,
        filters: ConsumerFilterTable | None = None,
        clock_ms: Callable[[], int] | None = None,
        topics_changed: Callable[[], None] | None = None,
    ) -> None:
        self.topics_changed = topics_changed
        #: The broker's clock: what message TTLs are measured against (broker/expiry.py).
        self.clock_ms = clock_ms or (lambda: time.time_ns() // 1_000_000)
        self.expiry = ExpiryCounter(stats.record_expired if stats is not None else lambda g, t, n: None)
        #: Tag and SQL92 filters (broker/sqlfilter.py); SQL92 selectors are compiled once per version.
        self.filters = filters if filters is not None else ConsumerFilterTable(
            lambda: live.value.enable_property_filter
        )
        self.stats = stats
        self.live = live
        self.topics = topics
        self.groups = groups
        self.consumers = consumers
        self.offsets = offsets
        self.store = store
        self.waiters = waiters
        self.groups_changed = groups_changed
        #: Pulls repeat the same expression with every request: each is parsed once and kept,
        #: bounded by bytes (subcache.py). Subscriptions are frozen, so pulls share them safely.
        self.subscriptions: BoundedCache[tuple[str, str | None, str, int], Subscription] = BoundedCache()

    def register(self, server: Registry) -> None:
        server.register(RequestCode.PULL_MESSAGE, self.pull)

    def _subscription(self, request: RemotingCommand, group: str, topic: str, sys_flag: int) -> Subscription:
        sub_version = integer(request, "subVersion", 0)
        if sys_flag & PullSysFlag.SUBSCRIPTION:
            key = (topic, request.field("subscription"), optional_text(request, "expressionType", "TAG") or "TAG",
                   sub_version)
            subscription = self.subscriptions.get(key)
            if subscription is None:
                subscription = subscription_from_expression(*key)
                self.subscriptions.put(key, subscription, subscription_size(subscription))
            return subscription
        info = self.consumers.get(group)
        if info is None:
            raise SubscriptionNotExist(f"the consumer's group info not exist, {group}")
        group_config = self.groups.get(group)
        if (
            info.message_model == "BROADCASTING"
            and group_config is not None
            and not group_config.consume_broadcast_enable
        ):
            raise NoPermission(f"the consumer group[{group}] can not consume by broadcast way")
        subscription = info.subscriptions.get(topic)
        if subscription is None:
            raise SubscriptionNotExist(f"the consumer's subscription not exist, {topic}")
        if subscription.sub_version < sub_version:
            raise SubscriptionNotLatest(
                f"the consumer's subscription not latest, {subscription.sub_version} < {sub_version}"
            )
        return subscription

    async def pull(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        config = self.live.value
        # Names are checked first: a pull must never auto-create a group such as `../g`.
        group = group_field(request, "consumerGroup")
        topic = topic_field(request)
        queue_id = integer(request, "queueId")
        offset = integer(request, "queueOffset")
        max_nums = integer(request, "maxMsgNums")
        sys_flag = integer(request, "sysFlag", 0)
        if not config.broker_permission & PERM_READ:
            raise NoPermission(f"the broker[{config.advertised_ip}] pulling message is forbidden")
        known = group in self.groups
        group_config = self.groups.find_or_create(group)
        if group_config is None:
            raise SubscriptionGroupNotExist(f"subscription group [{group}] does not exist")
        if not known:
            self.groups_changed()
        if not group_config.consume_enable:
            raise NoPermission(f"subscription group no permission, {group}")
        topic_config = self.topics.get(topic)
        if topic_config is None:
            raise TopicNotExist(f"topic[{topic}] not exist, apply first please!")
        if not topic_config.readable:
            raise NoPermission(f"the topic[{topic}] pulling message is forbidden")
        if queue_id < 0 or queue_id >= topic_config.read_queue_nums:
            raise SystemError_(
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{topic_config.read_queue_nums}] consumer:[{peer.addr}]"
            )
        if max_nums <= 0:
            raise SystemError_(f"maxMsgNums {max_nums} must be positive")
        subscription = self._subscription(request, group, topic, sys_flag)
        await self.filters.precompile(subscription.expression_type, subscription.sub_string)
        message_filter = self.filters.filter_for(group, subscription)
        expiry: ExpiryFilter | None = None
        if topic_config.attributes:
            default_ttl = topic_ttl(topic_config.attribute(TOPIC_TTL_ATTRIBUTE))
            if default_ttl is not None:
                keep = group_config.attribute(EXPIRED_POLICY_ATTRIBUTE) == POLICY_DLQ
                expiry = self.expiry.filter(message_filter, default_ttl, self.clock_ms, group, topic, queue_id, keep)
                message_filter = expiry

        if sys_flag & PullSysFlag.COMMIT_OFFSET and config.store.broker_role is not BrokerRole.SLAVE:
            commit_offset = integer(request, "commitOffset", -1)
            if 0 <= commit_offset <= MAX_OFFSET:
                self.offsets.commit(group, topic, queue_id, commit_offset)

        result = self.store.get_message(group, topic, queue_id, offset, max_nums, message_filter)
        code = response_code(result, offset)
        if config.store.broker_role is BrokerRole.SLAVE and not config.slave_read_enable:
            # A slave that may not be read sends the consumer back to the master at once.
            return self._respond(request, result, ResponseCode.PULL_RETRY_IMMEDIATELY)
        if code == ResponseCode.PULL_NOT_FOUND and sys_flag & PullSysFlag.SUSPEND:
            refused = self.waiters.refusal(
                peer.id, config.max_suspended_pulls, config.max_suspended_pulls_per_connection
            )
            if refused is not None:
                result.release()
                raise SystemBusy(refused)
            result = await self._hold(
                topic, queue_id, offset, request, result, message_filter, max_nums, group, peer.id
            )
            code = response_code(result, offset)
        if expiry is not None:
            if expiry.dead:
                await self._dead_letter(group, expiry.dead)
            self.expiry.done(expiry, group, topic, queue_id)
        if self.stats is not None and result.message_count:
            self.stats.record_get(
                group, topic, result.message_count, result.buffer_total_size, queue_id, result.next_begin_offset
            )
        suggest = 0
        if config.slave_read_enable:
            # RocketMQ's rule: a consumer far behind (its data no longer in memory) is sent to
            # the group's whichBrokerWhenConsumeSlowly, one that keeps up to the group's brokerId.
            suggest = (
                group_config.which_broker_when_consume_slowly
                if result.suggest_pulling_from_slave
                else group_config.broker_id
            )
        return self._respond(request, result, code, suggest)

    async def _dead_letter(self, group: str, dead: list[tuple[MessageExt, int]]) -> None:
        """The DLQ policy: expired messages go to %DLQ%<group>, as a consumer's retries would send them."""
        dlq = names.dlq_topic(group)
        if dlq not in self.topics:
            self.topics.ensure(dlq, 1, PERM_READ | PERM_WRITE)
            if self.topics_changed is not None:
                self.topics_changed()
        host = self.live.value.broker_addr
        for msg, deadline in dead:
            properties = dict(msg.properties)
            properties.setdefault(mc.RETRY_TOPIC, msg.topic)
            properties.setdefault(mc.ORIGIN_MESSAGE_ID, msg.msg_id)
            properties[EXPIRED_PROPERTY] = str(deadline)
            letter = MessageExtBrokerInner(
                dlq, msg.body, msg.flag, properties, queue_id=0, sys_flag=msg.sys_flag,
                born_timestamp=msg.born_timestamp, born_host=msg.born_host, store_host=host,
                reconsume_times=msg.reconsume_times, tags_code=tag_hash_code(properties.get(mc.TAGS)),
            )
            letter.refresh_properties_string()
            result = await self.store.put_message(letter)
            if not result.is_ok:
                log.warning("expired message %s not sent to %s: %s", msg.msg_id, dlq, result.status.value)

    async def _hold(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        request: RemotingCommand,
        result: GetMessageResult,
        message_filter: MessageFilter,
        max_nums: int,
        group: str,
        owner: int,
    ) -> GetMessageResult:
        """Long poll: wait for a dispatch to this queue, then read again (once per wake)."""
        config = self.live.value
        loop = asyncio.get_running_loop()
        if config.long_polling_enable:
            suspend_ms = min(max(integer(request, "suspendTimeoutMillis", 0), 0), config.max_suspend_time_mills)
        else:
            suspend_ms = config.short_polling_time_mills
        deadline = loop.time() + suspend_ms / 1000
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return result
            if config.long_polling_enable:
                woken = await self.waiters.wait(topic, queue_id, offset, remaining, owner)
            else:
                # Short polling waits out its time, but parked all the same (and counted).
                await self.waiters.wait(topic, queue_id, NEVER_WOKEN, remaining, owner)
                woken = True
            result.release()
            result = self.store.get_message(group, topic, queue_id, offset, max_nums, message_filter)
            if not woken or response_code(result, offset) != ResponseCode.PULL_NOT_FOUND:
                return result

    def _respond(
        self, request: RemotingCommand, result: GetMessageResult, code: int, suggest: int = 0
    ) -> RemotingCommand:
        fields = PullMessageResponseHeader(
            suggest_which_broker_id=suggest,
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        ).to_ext_fields()
        response = request.response(code, result.status.value, fields)
        if code == ResponseCode.SUCCESS:
            response.body = result.buffers
            release_after_write(result)
        else:
            result.release()
        return response
