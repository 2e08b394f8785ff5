"""The send-path hook that sends a message to wait: by time (timer) or by delay level.

`DelayRouting(schedule, timers)` is called with each single message after the
broker built it and before it is stored. A message asking for a time goes to
the timer (its DELAY, if any, is dropped: the explicit time wins); otherwise
a DELAY level sends it to the schedule topic; otherwise nothing changes. A
malformed time or one beyond the horizon is refused with MESSAGE_ILLEGAL.
"""

from __future__ import annotations

from collections.abc import Mapping

from orbitmq.broker.schedule import ScheduleService
from orbitmq.broker.timer import props as tp
from orbitmq.broker.timer.service import TimerService
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.errors import MessageIllegal


class DelayRouting:
    def __init__(self, schedule: ScheduleService, timers: TimerService) -> None:
        self.schedule = schedule
        self.timers = timers

    def __call__(self, msg: MessageExtBrokerInner) -> None:
        """Rewrite `msg` in place (topic, queue, properties, tag slot) when it must wait."""
        properties = msg.properties
        # The common case (no delay asked) costs five dict lookups on the send path.
        if (
            mc.DELAY_TIME_LEVEL not in properties
            and tp.TIMER_DELIVER_MS not in properties
            and tp.TIMER_DELAY_SEC not in properties
            and tp.TIMER_DELAY_MS not in properties
            and tp.TIMER_DEL_UNIQKEY not in properties
        ):
            return
        if self.timers.rewrite(msg):  # a malformed time raises TimerPropertyError (MESSAGE_ILLEGAL)
            return
        self.schedule.rewrite(msg)


def refuse_waiting_batch(properties: Mapping[str, str]) -> None:
    """Batches cannot wait: a batch asking for a time is refused as RocketMQ refuses delayed batches."""
    if tp.has_timer(properties):
        raise MessageIllegal("batch message does not support timer message")
