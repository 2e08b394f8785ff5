"""Request-reply (§6.9): a producer sends a request and waits for the one reply to it.

Requester side: `request()` gives the message a CORRELATION_ID (a random
UUID), REPLY_TO_CLIENT (this client's id) and TTL (the timeout in ms),
makes sure the brokers know this client (a heartbeat before its first
request), sends the message like any other and waits for the reply, which
the broker pushes with PUSH_REPLY_MESSAGE_TO_CLIENT. `replies.ReplyWaiters` (one
per client instance) matches pushed replies to waiting requests by
correlation id.

Responder side: `create_reply_message(request, body)` builds the reply:
topic `<CLUSTER>_REPLY_TOPIC`, MSG_TYPE=reply, the correlation properties
copied. A producer sends a message marked MSG_TYPE=reply with
SEND_REPLY_MESSAGE_V2 (325).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any, Protocol

from orbitmq.client.config import ProducerConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.client.message import Message
from orbitmq.client.queue import MessageQueue
from orbitmq.client.replies import REPLY_MESSAGE_TYPE, is_reply
from orbitmq.client.selector import QueueSelector
from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.message import Message as _Message
from orbitmq.common.message import MessageExt
from orbitmq.errors import ClientError, RequestTimeout

__all__ = ["REPLY_MESSAGE_TYPE", "RequestReplyTimeout", "Requester", "create_reply_message", "is_reply",
           "request", "request_async"]

RequestCallback = Callable[[MessageExt | None, BaseException | None], Any]


class RequestReplyTimeout(RequestTimeout):
    """No reply arrived within the request's timeout (the request itself was sent)."""


class Requester(Protocol):
    """What a request needs of its producer: its instance, its topic defaults and `send`."""

    config: ProducerConfig

    @property
    def instance(self) -> ClientInstance: ...

    async def send(
        self, msg: _Message, *, selector: QueueSelector | None = ..., arg: Any = ...,
        queue: MessageQueue | None = ..., timeout: float | None = ...,
    ) -> Any: ...


def create_reply_message(request: MessageExt, body: bytes) -> Message:
    """The reply to `request`, to be sent with any producer (`producer.send(reply)`).

    Raises ClientError when the request lacks the properties a reply needs
    (CLUSTER, which the broker adds, and REPLY_TO_CLIENT).
    """
    cluster = request.properties.get(mc.CLUSTER)
    if not cluster:
        raise ClientError("create reply message fail, requestMessage error, property[CLUSTER] is null.")
    if not request.properties.get(mc.MESSAGE_REPLY_TO_CLIENT):
        raise ClientError("create reply message fail: the request has no REPLY_TO_CLIENT, it is not a request")
    reply = Message(names.reply_topic(cluster), bytes(body))
    reply.properties[mc.MESSAGE_TYPE] = REPLY_MESSAGE_TYPE
    for name in (mc.CORRELATION_ID, mc.MESSAGE_REPLY_TO_CLIENT, mc.MESSAGE_TTL):
        value = request.properties.get(name)
        if value is not None:
            reply.properties[name] = value
    return reply


async def request(
    producer: Requester,
    msg: _Message,
    timeout: float,
    *,
    selector: QueueSelector | None = None,
    arg: Any = None,
    queue: MessageQueue | None = None,
) -> MessageExt:
    """Send `msg` as a request and return its reply; `RequestReplyTimeout` when none came in time."""
    if timeout <= 0:
        raise ClientError(f"a request needs a positive timeout, not {timeout}")
    started = time.monotonic()
    instance = producer.instance
    correlation_id = str(uuid.uuid4())
    msg.properties[mc.CORRELATION_ID] = correlation_id
    msg.properties[mc.MESSAGE_REPLY_TO_CLIENT] = instance.client_id
    msg.properties[mc.MESSAGE_TTL] = str(int(timeout * 1000))
    await _announce(producer, msg.topic)
    waiters = instance.replies
    reply = waiters.expect(correlation_id)
    try:
        await producer.send(msg, selector=selector, arg=arg, queue=queue, timeout=timeout)
        remaining = timeout - (time.monotonic() - started)
        try:
            return await asyncio.wait_for(reply, max(remaining, 0.0))
        except TimeoutError:
            raise RequestReplyTimeout(
                f"send request message to <{msg.topic}> OK, but wait reply message timeout, "
                f"{int(timeout * 1000)} ms (correlation id {correlation_id})"
            ) from None
    finally:
        waiters.forget(correlation_id)


def request_async(
    producer: Requester,
    msg: _Message,
    callback: RequestCallback | None,
    timeout: float,
    *,
    selector: QueueSelector | None = None,
    arg: Any = None,
    queue: MessageQueue | None = None,
) -> asyncio.Future[MessageExt]:
    """Start a request and return at once; `callback(reply, exc)` runs on the loop exactly once."""
    fut = asyncio.ensure_future(request(producer, msg, timeout, selector=selector, arg=arg, queue=queue))
    if callback is not None:
        def done(f: asyncio.Future[MessageExt]) -> None:
            if f.cancelled():
                callback(None, asyncio.CancelledError())
            elif f.exception() is not None:
                callback(None, f.exception())
            else:
                callback(f.result(), None)
        fut.add_done_callback(done)
    return fut


async def _announce(producer: Requester, topic: str) -> None:
    """Heartbeat to the brokers of `topic` before the first request, so a reply can find this client."""
    instance = producer.instance
    route = instance.routes.get(topic) or await instance.update_route(topic)
    if route is None:
        # A topic this send will create: learning the template's route tells us its brokers.
        await instance.publish_info(topic, producer.config.create_topic_key, producer.config.default_topic_queue_nums)
        brokers = set(instance.broker_addrs)
    else:
        brokers = {b.broker_name for b in route.broker_datas}
    if not brokers <= instance.replies.announced_to:
        await instance.send_heartbeat_to_all()
        instance.replies.announced_to |= brokers
