"""Timed messages you can recall, list, cancel and reschedule.

* RECALL_MESSAGE (370, RocketMQ 5.3): header `producerGroup`, `topic`, `recallHandle`
  (and RocketMQ 5's `bname`); the handle is the one a timer send's response carried
  (`recall_handle`); the broker stores a delete marker for the timer it names and
  answers `msgId` (the recalled message's id).
* LIST_TIMER_MESSAGES, CANCEL_TIMER_MESSAGE, RESCHEDULE_TIMER_MESSAGE (OrbitMQ's own
  codes): the pending timers of a topic by due time (JSON body), cancel one by message
  id, move one to a new time. A cancel or a recall is a delete marker in the store,
  so it survives a restart.
"""

from __future__ import annotations

from collections.abc import Callable

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.handlers.fields import Registry, integer, text
from orbitmq.broker.timer.service import PendingTimer, TimerService
from orbitmq.broker.topics import TopicTable
from orbitmq.common import jsonbody
from orbitmq.common.recall import ILLEGAL_OPERATION, parse_recall_handle
from orbitmq.errors import BrokerError, QueryNotFound, ServiceNotAvailable, TopicNotExist
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer


class TimerHandlers:
    def __init__(self, *, live: LiveConfig, topics: TopicTable, timers: Callable[[], TimerService | None]) -> None:
        self.live = live
        self.topics = topics
        self._timers = timers

    def register(self, server: Registry) -> None:
        server.register(RequestCode.RECALL_MESSAGE, self.recall)
        server.register(RequestCode.LIST_TIMER_MESSAGES, self.list_pending)
        server.register(RequestCode.CANCEL_TIMER_MESSAGE, self.cancel)
        server.register(RequestCode.RESCHEDULE_TIMER_MESSAGE, self.reschedule)

    def _service(self) -> TimerService:
        service = self._timers()
        if service is None:
            raise ServiceNotAvailable("the timer service is not running")
        return service

    def _topic(self, request: RemotingCommand) -> str:
        topic = text(request, "topic")
        if topic not in self.topics:
            raise TopicNotExist(f"topic[{topic}] not exist")
        return topic

    async def recall(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = self._topic(request)
        handle_topic, broker_name, deliver_ms, msg_id = parse_recall_handle(text(request, "recallHandle"))
        config = self.live.value
        if handle_topic != topic:
            raise BrokerError("recall failed, topic not match", code=ILLEGAL_OPERATION)
        if broker_name != config.broker_name:
            raise BrokerError("recall failed, broker service not available", code=ILLEGAL_OPERATION)
        service = self._service()
        left = deliver_ms - service.clock_ms()
        if left <= 0 or left >= service.max_delay_ms:
            raise BrokerError("recall failed, timestamp invalid", code=ILLEGAL_OPERATION)
        await service.put_marker(topic, msg_id, deliver_ms)
        return self._ok(request, {"msgId": msg_id})

    async def list_pending(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = self._topic(request)
        timers = self._service().pending(topic)
        limit = integer(request, "maxCount", 1000)
        body = jsonbody.dumps({"timers": [t.to_json() for t in timers[: max(limit, 0)]], "total": len(timers)})
        return self._ok(request, None, body)

    async def cancel(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = self._topic(request)
        msg_id = text(request, "msgId")
        return self._answer(request, await self._service().cancel(topic, msg_id), topic, msg_id)

    async def reschedule(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = self._topic(request)
        msg_id = text(request, "msgId")
        deliver_ms = integer(request, "deliverMs")
        return self._answer(request, await self._service().reschedule(topic, msg_id, deliver_ms), topic, msg_id)

    def _answer(self, request: RemotingCommand, found: PendingTimer | None, topic: str, msg_id: str) -> RemotingCommand:
        if found is None:
            raise QueryNotFound(f"no pending timer message {msg_id} of topic {topic}")
        return self._ok(request, None, jsonbody.dumps(found.to_json()))

    @staticmethod
    def _ok(request: RemotingCommand, fields: dict[str, str] | None, body: bytes | None = None) -> RemotingCommand:
        return request.response(ResponseCode.SUCCESS, ext_fields=fields, body=body)
