"""The optional second argument of a listener: RocketMQ's consume contexts plus OrbitMQ's retry choices.

A listener written `fn(msgs)` gets none; one written `fn(msgs, context)`
gets a `ConsumeConcurrentlyContext` (register_listener) or a
`ConsumeOrderlyContext` (register_orderly_listener) and may change it
before returning:

* concurrently — `ack_index` (RocketMQ's ackIndex: on CONSUME_SUCCESS the
  messages after this index count as failed), `delay_level_when_next_consume`
  (0: the broker picks 3 + reconsume times; > 0: that level; < 0: straight to
  the DLQ), `next_delay_ms` (retry after this many ms, served by the broker's
  timer; wins over the level), `send_to_dlq` (every failed message of the
  batch goes to the DLQ) and `give_up(msg)` (this message goes to the DLQ,
  whatever the result);
* orderly — `auto_commit` (RocketMQ's: False makes SUCCESS leave the offset
  uncommitted until a COMMIT), `suspend_current_queue_time_millis` (the wait
  before this batch is consumed again; -1: the consumer's backoff) and
  `send_to_dlq` (the failed batch goes to the DLQ at once and the queue moves on).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.client.queue import MessageQueue
from orbitmq.common.message import MessageExt

#: RocketMQ's default ackIndex: every message of a successful batch is acknowledged.
ACK_ALL = (1 << 31) - 1


@dataclass
class ConsumeConcurrentlyContext:
    message_queue: MessageQueue
    ack_index: int = ACK_ALL
    delay_level_when_next_consume: int = 0
    next_delay_ms: int | None = None
    send_to_dlq: bool = False
    _given_up: set[int] = field(default_factory=set, repr=False)

    def give_up(self, msg: MessageExt) -> None:
        """Send `msg` to the group's DLQ instead of retrying it (it counts as failed)."""
        self._given_up.add(id(msg))

    def gave_up(self, msg: MessageExt) -> bool:
        return id(msg) in self._given_up


@dataclass
class ConsumeOrderlyContext:
    message_queue: MessageQueue
    auto_commit: bool = True
    suspend_current_queue_time_millis: int = -1
    send_to_dlq: bool = False
