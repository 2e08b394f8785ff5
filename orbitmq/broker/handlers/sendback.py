"""CONSUMER_SEND_MSG_BACK (36): a consumer returns a message it could not consume (§3.5, §6.7).

Checks in RocketMQ's order: the group exists (or is auto-created) → else 26;
the broker is writable → else 16; a group with no retry queues drops the
message (SUCCESS); the retry topic exists (created on demand with the
group's retryQueueNums, perm R|W) and is writable; the original record is
found by its CommitLog offset → else 1. The decision and the new record
come from `broker/retry.py`; a retry waits at its delay level in the
schedule topic, a dead letter goes to `%DLQ%<group>` (one queue, perm R|W,
created on demand) at once.

OrbitMQ's own header fields (a RocketMQ broker ignores them, so any client may
send them and any broker may receive them): `orbitmqDelayMs` — wait this many
ms in the timer instead of at a delay level (not for dead letters);
`orbitmqLastError` and `orbitmqAttempts` — recorded on the new record as
ORBITMQ_LAST_ERROR and ORBITMQ_ATTEMPTS, for the DLQ tools.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from orbitmq.broker import retry
from orbitmq.broker.config import LiveConfig
from orbitmq.broker.handlers.fields import Registry, group_field, integer
from orbitmq.broker.handlers.send import status_response
from orbitmq.broker.stats import BrokerStats
from orbitmq.broker.subscriptions import SubscriptionGroupTable
from orbitmq.broker.topics import TopicTable
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt, MessageExtBrokerInner
from orbitmq.common.names import PERM_READ, PERM_WRITE
from orbitmq.common.record import decode_record
from orbitmq.errors import NoPermission, OrbitMQError, SubscriptionGroupNotExist, SystemError_
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.store.api import MessageStore, PutMessageStatus


class SendBackHandler:
    def __init__(
        self,
        *,
        live: LiveConfig,
        topics: TopicTable,
        groups: SubscriptionGroupTable,
        store: MessageStore,
        route_delayed: Callable[[MessageExtBrokerInner], object],
        topics_changed: Callable[[], None],
        groups_changed: Callable[[], None],
        stats: BrokerStats | None = None,
    ) -> None:
        self.live = live
        self.topics = topics
        self.groups = groups
        self.store = store
        #: Sends a message carrying a timer time to the timer, else one carrying DELAY to the
        #: schedule topic (DelayRouting).
        self.route_delayed = route_delayed
        self.topics_changed = topics_changed
        self.groups_changed = groups_changed
        self.stats = stats

    def register(self, server: Registry) -> None:
        server.register(RequestCode.CONSUMER_SEND_MSG_BACK, self.send_back)

    async def send_back(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        config = self.live.value
        offset = integer(request, "offset")
        group_name = group_field(request, "group")
        delay_level = integer(request, "delayLevel", 0)
        known = group_name in self.groups
        group = self.groups.find_or_create(group_name)
        if group is None:
            raise SubscriptionGroupNotExist(f"subscription group not exist, {group_name}")
        if not known:
            self.groups_changed()
        if not config.broker_permission & PERM_WRITE:
            raise NoPermission(f"the broker[{config.advertised_ip}] sending message is forbidden")
        if group.retry_queue_nums <= 0:
            return request.response(ResponseCode.SUCCESS)
        self._ensure_topic(retry.RetryTarget(names.retry_topic(group_name), group.retry_queue_nums, 0))

        original = self._look_up(offset)
        header_max = request.field("maxReconsumeTimes")
        max_times = retry.max_reconsume_times(
            group.retry_max_times, integer(request, "maxReconsumeTimes") if header_max else None, request.version
        )
        target = retry.decide(group_name, original.reconsume_times, max_times, delay_level, group.retry_queue_nums)
        if target.dead:
            self._ensure_topic(target)
        msg = retry.retry_record(original, target, random.randrange(target.queue_nums), config.broker_addr)
        self._orbitmq_fields(request, msg, target)
        self.route_delayed(msg)
        msg.refresh_properties_string()
        result = await self.store.put_message(msg)
        # Stored but not replicated in time (or not flushed) is not acknowledged either: the
        # consumer then sends the message again itself (a duplicate rather than a loss).
        if result.status is not PutMessageStatus.PUT_OK:
            return status_response(request, result, config.store.max_message_size)
        if self.stats is not None:
            self.stats.record_put(1, msg.topic, len(msg.body))
            if target.dead:
                self.stats.record_dlq(group_name, msg.properties.get(mc.RETRY_TOPIC, original.topic))
        return request.response(ResponseCode.SUCCESS)

    @staticmethod
    def _orbitmq_fields(request: RemotingCommand, msg: MessageExtBrokerInner, target: retry.RetryTarget) -> None:
        error = request.field("orbitmqLastError")
        if error:
            msg.properties[mc.ORBITMQ_LAST_ERROR] = mc.error_text(error)
        if request.field("orbitmqAttempts"):
            attempts = integer(request, "orbitmqAttempts")
            if attempts > 0:
                msg.properties[mc.ORBITMQ_ATTEMPTS] = str(attempts)
        if request.field("orbitmqDelayMs") and not target.dead:
            delay_ms = integer(request, "orbitmqDelayMs")
            if delay_ms < 0:
                raise SystemError_(f"the custom field <orbitmqDelayMs> must not be negative: {delay_ms}")
            # The timer serves it (route_delayed sees TIMER_DELAY_MS before DELAY).
            msg.properties.pop(mc.DELAY_TIME_LEVEL, None)
            msg.properties[mc.TIMER_DELAY_MS] = str(delay_ms)

    def _ensure_topic(self, target: retry.RetryTarget) -> None:
        """Create the retry or dead-letter topic on demand; refuse when it is not writable."""
        existing = self.topics.get(target.topic)
        if existing is None:
            existing = self.topics.ensure(target.topic, target.queue_nums, PERM_READ | PERM_WRITE)
            self.topics_changed()
        if not existing.writable:
            raise NoPermission(f"the topic[{target.topic}] sending message is forbidden")

    def _look_up(self, offset: int) -> MessageExt:
        """The original record, decoded without touching a compressed body (its sysflag is kept)."""
        found = self.store.select_one_message_by_offset(offset) if offset >= 0 else None
        if found is None:
            raise SystemError_(f"look message by offset failed, {offset}")
        with found:
            try:
                return decode_record(found.buffer, decompress=False)
            except OrbitMQError as exc:
                raise SystemError_(f"look message by offset failed, {offset}: {exc}")
