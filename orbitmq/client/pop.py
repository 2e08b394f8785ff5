"""A small POP client over the remoting protocol (RocketMQ 5's requests, as its Java client builds them).

    popped = await pop(client, addr, "broker-a", "G", "T", invisible_ms=30_000, poll_ms=2_000)
    for m in popped.messages:
        await ack(client, addr, "G", m)          # or change_invisible(...)

`pop` decodes the records and gives each message its extraInfo (`POP_CK`) the way RocketMQ's
client does: from the message's own POP_CK property (retried messages) or from the response's
startOffsetInfo by `topicType@queueId`. `Popped.status` is "FOUND", "NO_NEW_MSG" (210) or
"POLLING_FULL" (209).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from orbitmq.common import extra_info as xi
from orbitmq.common.message import MessageExt
from orbitmq.common.record import iter_records
from orbitmq.errors import BrokerError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.pop_headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from orbitmq.remoting.transport import RemotingClient

POP_CK = "POP_CK"


@dataclass(slots=True)
class PoppedMessage:
    message: MessageExt
    extra_info: str
    #: The topic to ack on: the POP retry topic for a retried message.
    real_topic: str
    #: Delivery attempts before this one (FIFO: from orderCountInfo).
    reconsume_times: int


@dataclass(slots=True)
class Popped:
    status: str
    messages: list[PoppedMessage] = field(default_factory=list)
    header: PopMessageResponseHeader | None = None


def pop_request(
    group: str, topic: str, *, queue_id: int = -1, max_nums: int = 32, invisible_ms: int = 60_000,
    poll_ms: int = 0, init_mode: int = 0, exp_type: str = "TAG", exp: str = "*", order: bool = False,
    attempt_id: str | None = None,
) -> RemotingCommand:
    header = PopMessageRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, max_msg_nums=max_nums, invisible_time=invisible_ms,
        poll_time=poll_ms, born_time=int(time.time() * 1000), init_mode=init_mode, exp_type=exp_type, exp=exp,
        order=order, attempt_id=attempt_id,
    )
    return RemotingCommand.request(RequestCode.POP_MESSAGE, header.to_ext_fields())


def read_pop_response(group: str, topic: str, broker_name: str, response: RemotingCommand) -> Popped:
    """Decode a POP answer; `broker_name` is the name of the broker popped (from the route), part of each handle."""
    if response.code == ResponseCode.POLLING_TIMEOUT:
        return Popped("NO_NEW_MSG")
    if response.code == ResponseCode.POLLING_FULL:
        return Popped("POLLING_FULL")
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError.for_code(response.code, response.remark)
    header = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
    starts = xi.parse_start_offset_info(header.start_offset_info)
    counts = xi.parse_order_count_info(header.order_count_info)
    popped = Popped("FOUND", header=header)
    for msg in iter_records(response.body_bytes() if response.body is not None else b""):
        ck = msg.properties.get(POP_CK)
        if ck is None:
            kind = xi.topic_type(msg.topic)
            start = starts.get(f"{kind}@{msg.queue_id}", msg.queue_offset)
            ck = str(xi.ExtraInfo(start, header.pop_time, header.invisible_time, header.revive_qid, kind,
                                  broker_name, msg.queue_id, msg.queue_offset))
            msg.properties[POP_CK] = ck
        info = xi.parse_extra_info(ck)
        reconsume = counts.get(f"{info.kind}@qo{info.queue_id}%{info.offset}", msg.reconsume_times)
        popped.messages.append(PoppedMessage(msg, ck, xi.real_topic(info.kind, topic, group), reconsume))
    return popped


async def pop(
    client: RemotingClient, addr: str, broker_name: str, group: str, topic: str, *, timeout: float | None = None,
    queue_id: int = -1, max_nums: int = 32, invisible_ms: int = 60_000, poll_ms: int = 0, init_mode: int = 0,
    exp_type: str = "TAG", exp: str = "*", order: bool = False, attempt_id: str | None = None,
) -> Popped:
    request = pop_request(
        group, topic, queue_id=queue_id, max_nums=max_nums, invisible_ms=invisible_ms, poll_ms=poll_ms,
        init_mode=init_mode, exp_type=exp_type, exp=exp, order=order, attempt_id=attempt_id,
    )
    response = await client.invoke(addr, request, timeout if timeout is not None else poll_ms / 1000 + 5)
    return read_pop_response(group, topic, broker_name, response)


async def ack(client: RemotingClient, addr: str, group: str, message: PoppedMessage, timeout: float = 5.0) -> None:
    info = xi.parse_extra_info(message.extra_info)
    header = AckMessageRequestHeader(
        consumer_group=group, topic=message.real_topic, queue_id=info.queue_id, extra_info=message.extra_info,
        offset=info.offset,
    )
    response = await client.invoke(addr, RemotingCommand.request(RequestCode.ACK_MESSAGE, header.to_ext_fields()),
                                   timeout)
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError.for_code(response.code, response.remark)


async def change_invisible(
    client: RemotingClient, addr: str, group: str, message: PoppedMessage, invisible_ms: int, timeout: float = 5.0
) -> PoppedMessage:
    """Renew (or nack with a delay); returns the message with its new extraInfo."""
    info = xi.parse_extra_info(message.extra_info)
    header = ChangeInvisibleTimeRequestHeader(
        consumer_group=group, topic=message.real_topic, queue_id=info.queue_id, extra_info=message.extra_info,
        offset=info.offset, invisible_time=invisible_ms,
    )
    request = RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields())
    response = await client.invoke(addr, request, timeout)
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError.for_code(response.code, response.remark)
    answer = ChangeInvisibleTimeResponseHeader.from_ext_fields(response.ext_fields)
    start = info.ck_offset if info.is_fifo else info.offset
    new = xi.ExtraInfo(start, answer.pop_time, answer.invisible_time, answer.revive_qid, info.kind,
                       info.broker_name, info.queue_id, info.offset)
    return PoppedMessage(message.message, str(new), message.real_topic, message.reconsume_times)
