"""Retry and dead-letter decisions for messages a consumer gives back (§6.7), as pure functions.

* `max_reconsume_times` — the group's retryMaxTimes, or the client's own
  maximum when the client is new enough to send one (version ≥ 121, as the
  4.9.7 broker reads it).
* `decide` — where a message goes back to: `%RETRY%<group>` with a delay
  level (the one asked for, else 3 + reconsume times: 10 s, 30 s, 1 m, ...),
  or `%DLQ%<group>` without delay once retries are used up or when the
  consumer asks for it (delay level < 0).
* `retry_record` — the new record: the original's body, flag, sysflag, born
  time and host and properties, one more reconsume time, RETRY_TOPIC set to
  the first topic, ORIGIN_MESSAGE_ID set to the first delivery's id.
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExt, MessageExtBrokerInner

#: Clients from this version on send their own maxReconsumeTimes (RocketMQ V3_4_9).
MIN_VERSION_WITH_MAX_RECONSUME = 121
#: Dead-letter topics have one queue (RocketMQ's DLQ_NUMS_PER_GROUP).
DLQ_QUEUE_NUMS = 1
#: The first broker-chosen retry waits at level 3 (10 s in the default table).
FIRST_RETRY_LEVEL = 3


@dataclass(frozen=True, slots=True)
class RetryTarget:
    """Where a returned message is written."""

    topic: str
    #: Queue count of the topic when it has to be created.
    queue_nums: int
    #: Delay level to wait at; 0 for the dead-letter queue.
    delay_level: int

    @property
    def dead(self) -> bool:
        return names.is_dlq_topic(self.topic)


def max_reconsume_times(group_max: int, header_max: int | None, client_version: int) -> int:
    if header_max is not None and client_version >= MIN_VERSION_WITH_MAX_RECONSUME:
        return header_max
    return group_max


def decide(group: str, reconsume_times: int, max_times: int, delay_level: int, retry_queue_nums: int) -> RetryTarget:
    """The retry or dead-letter target of a message consumed `reconsume_times` times before."""
    if reconsume_times >= max_times or delay_level < 0:
        return RetryTarget(names.dlq_topic(group), DLQ_QUEUE_NUMS, 0)
    level = delay_level if delay_level > 0 else FIRST_RETRY_LEVEL + reconsume_times
    return RetryTarget(names.retry_topic(group), retry_queue_nums, level)


def retry_record(original: MessageExt, target: RetryTarget, queue_id: int, store_host: str) -> MessageExtBrokerInner:
    """The record that brings `original` back through `target` (delay level in DELAY, if any).

    The caller routes a DELAY to the schedule topic before storing it.
    """
    props = dict(original.properties)
    props.setdefault(mc.RETRY_TOPIC, original.topic)
    if not props.get(mc.ORIGIN_MESSAGE_ID):
        # RocketMQ keeps the id of the first delivery's record (its offset id) across retries.
        props[mc.ORIGIN_MESSAGE_ID] = original.offset_msg_id or original.msg_id
    props.pop(mc.DELAY_TIME_LEVEL, None)
    props.pop(mc.WAIT_STORE_MSG_OK, None)
    if target.delay_level > 0:
        props[mc.DELAY_TIME_LEVEL] = str(target.delay_level)
    msg = MessageExtBrokerInner(
        topic=target.topic,
        body=original.body,
        flag=original.flag,
        properties=props,
        queue_id=queue_id,
        sys_flag=original.sys_flag,
        born_timestamp=original.born_timestamp,
        born_host=original.born_host,
        store_host=store_host,
        reconsume_times=original.reconsume_times + 1,
        tags_code=tag_hash_code(props.get(mc.TAGS)),
    )
    return msg
