"""RocketMQ 5 POP requests (200050-200055, 200151) over `PopService` (broker/pop/; docs/pop.md).

Headers are RocketMQ 5's (remoting/pop_headers.py); every topic and group name is checked
with RocketMQ's rules first. Refusals are raised as `BrokerError`s with RocketMQ 5's codes.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from orbitmq.broker.handlers.fields import Registry, legal_group, legal_topic
from orbitmq.broker.handlers.query import release_after_write
from orbitmq.broker.pop.service import PopService
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.pop_headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PeekMessageResponseHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)


class _Named(Protocol):
    consumer_group: str
    topic: str


N = TypeVar("N", bound=_Named)


def _named(header: N) -> N:
    """`header` once its group and topic names pass RocketMQ's rules."""
    legal_group(header.consumer_group)
    legal_topic(header.topic)
    return header


def _join(entries: list[str]) -> str | None:
    return ";".join(entries) if entries else None


class PopHandlers:
    def __init__(self, service: PopService) -> None:
        self.service = service

    def register(self, server: Registry) -> None:
        server.register(RequestCode.POP_MESSAGE, self.pop)
        server.register(RequestCode.PEEK_MESSAGE, self.peek)
        server.register(RequestCode.ACK_MESSAGE, self.ack)
        server.register(RequestCode.BATCH_ACK_MESSAGE, self.batch_ack)
        server.register(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, self.change_invisible)
        server.register(RequestCode.NOTIFICATION, self.notification)
        server.register(RequestCode.POLLING_INFO, self.polling_info)

    async def pop(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        header = _named(PopMessageRequestHeader.from_ext_fields(request.ext_fields))
        outcome = await self.service.pop(header, owner=peer.id)
        fields = PopMessageResponseHeader(
            pop_time=outcome.pop_time, invisible_time=outcome.invisible_time, revive_qid=outcome.revive_qid,
            rest_num=outcome.rest_num, start_offset_info=_join(outcome.start_offset_info),
            msg_offset_info=_join(outcome.msg_offset_info), order_count_info=_join(outcome.order_count_info),
        ).to_ext_fields()
        response = request.response(ResponseCode.SUCCESS, "FOUND", fields)
        response.body = list(outcome.buffers)
        release_after_write(outcome)
        return response

    async def peek(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        header = _named(PeekMessageRequestHeader.from_ext_fields(request.ext_fields))
        results, rest = self.service.peek(header.consumer_group, header.topic, header.queue_id, header.max_msg_nums)
        fields = PeekMessageResponseHeader(rest_num=rest).to_ext_fields()
        if not results:
            return request.response(ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", fields)
        response = request.response(ResponseCode.SUCCESS, "FOUND", fields)
        response.body = [buffer for result in results for buffer in result.buffers]
        for result in results:
            release_after_write(result)
        return response

    async def ack(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        header = _named(AckMessageRequestHeader.from_ext_fields(request.ext_fields))
        await self.service.ack(header.consumer_group, header.topic, header.queue_id, header.offset, header.extra_info)
        return request.response(ResponseCode.SUCCESS)

    async def batch_ack(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        await self.service.batch_ack(request.body_bytes() if request.body is not None else b"")
        return request.response(ResponseCode.SUCCESS)

    async def change_invisible(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        header = _named(ChangeInvisibleTimeRequestHeader.from_ext_fields(request.ext_fields))
        pop_time, invisible_time, revive_qid = await self.service.change_invisible(
            header.consumer_group, header.topic, header.queue_id, header.offset, header.extra_info,
            header.invisible_time,
        )
        fields = ChangeInvisibleTimeResponseHeader(
            pop_time=pop_time, invisible_time=invisible_time, revive_qid=revive_qid
        ).to_ext_fields()
        return request.response(ResponseCode.SUCCESS, None, fields)

    async def notification(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        header = _named(NotificationRequestHeader.from_ext_fields(request.ext_fields))
        has_msg, full = await self.service.notification(
            header.consumer_group, header.topic, header.queue_id, header.poll_time, header.born_time,
            bool(header.order), header.attempt_id or None, owner=peer.id,
        )
        fields = NotificationResponseHeader(has_msg=has_msg, polling_full=full).to_ext_fields()
        return request.response(ResponseCode.SUCCESS, None, fields)

    async def polling_info(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        header = _named(PollingInfoRequestHeader.from_ext_fields(request.ext_fields))
        if header.topic not in self.service.topics:
            from orbitmq.errors import TopicNotExist

            raise TopicNotExist(f"topic[{header.topic}] not exist, apply first please!")
        num = self.service.polling_num(header.consumer_group, header.topic, header.queue_id)
        return request.response(ResponseCode.SUCCESS, None, PollingInfoResponseHeader(polling_num=num).to_ext_fields())
