"""Replies arriving at a requester: PUSH_REPLY_MESSAGE_TO_CLIENT matched to waiting requests (§6.9).

`ReplyWaiters` (one per client instance, which registers `on_push_reply` for
PUSH_REPLY_MESSAGE_TO_CLIENT) matches pushed replies to waiting requests by
correlation id; a reply nobody waits for any more (it came after the
timeout) is logged and dropped. The requester side lives in `request_reply`.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib

from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer

log = logging.getLogger(__name__)

#: MSG_TYPE of a reply message; a producer sends such a message with SEND_REPLY_MESSAGE_V2.
REPLY_MESSAGE_TYPE = "reply"
_COMPRESSED = 0x1


def is_reply(properties: dict[str, str]) -> bool:
    return properties.get(mc.MESSAGE_TYPE) == REPLY_MESSAGE_TYPE


class ReplyWaiters:
    """Requests waiting for their reply, by correlation id; owned by one client instance's loop."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[MessageExt]] = {}
        #: Brokers (by name) that have had a heartbeat since this client started requesting.
        self.announced_to: set[str] = set()

    def expect(self, correlation_id: str) -> asyncio.Future[MessageExt]:
        fut: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = fut
        return fut

    def forget(self, correlation_id: str) -> None:
        self._waiting.pop(correlation_id, None)

    def __len__(self) -> int:
        return len(self._waiting)

    async def on_push_reply(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """PUSH_REPLY_MESSAGE_TO_CLIENT: hand the reply to its waiting request."""
        try:
            reply = reply_from_push(request)
        except ValueError as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, f"bad reply message: {exc}")
        correlation_id = reply.properties.get(mc.CORRELATION_ID, "")
        fut = self._waiting.pop(correlation_id, None)
        if fut is None or fut.done():
            log.info("reply %s from %s came after its request gave up; dropped", correlation_id, peer.addr)
        else:
            fut.set_result(reply)
        return request.response(ResponseCode.SUCCESS)


def reply_from_push(request: RemotingCommand) -> MessageExt:
    """The reply message carried by a PUSH_REPLY_MESSAGE_TO_CLIENT request (header §3.12 + body)."""
    f = request.field
    sys_flag = int(f("sysFlag") or 0)
    body = request.body_bytes()
    if sys_flag & _COMPRESSED:
        try:
            body = zlib.decompress(body)
        except zlib.error as exc:
            raise ValueError(f"compressed body does not inflate: {exc}") from exc
    properties = mc.decode_properties(f("properties") or "")
    properties[mc.REPLY_MESSAGE_ARRIVE_TIME] = str(int(time.time() * 1000))
    return MessageExt(
        topic=f("topic") or "",
        body=body,
        flag=int(f("flag") or 0),
        properties=properties,
        queue_id=int(f("queueId") or 0),
        sys_flag=sys_flag,
        born_timestamp=int(f("bornTimestamp") or 0),
        born_host=f("bornHost") or "",
        store_timestamp=int(f("storeTimestamp") or 0),
        store_host=f("storeHost") or "",
        reconsume_times=int(f("reconsumeTimes") or 0),
        msg_id=properties.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, ""),
    )
