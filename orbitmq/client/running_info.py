"""Admin questions a broker forwards to a consumer: running info (307) and direct consumption (309).

`mqadmin consumerStatus` sends GET_CONSUMER_RUNNING_INFO and `mqadmin
consumeMessageDirectly` sends CONSUME_MESSAGE_DIRECTLY to a broker, which
forwards them over the consumer's own connection (§4.13). The client instance
registers the two handlers here; they find the group's consumer and ask it:

* `await consumer.running_info()` — ConsumerRunningInfo without the
  instance-wide properties, which the handler adds (name servers, consume
  type, client version), as Java's MQClientInstance does;
* `await consumer.consume_directly(msg, broker_name)` — a
  ConsumeMessageDirectlyResult after running the group's listener once.

A group this client does not run is answered SYSTEM_ERROR with Java's
remark; a malformed request gets SYSTEM_ERROR naming what is wrong.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import sys
import threading
import time
import traceback
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from orbitmq.client.consume_context import ConsumeConcurrentlyContext, ConsumeOrderlyContext
from orbitmq.client.listener import ListenerRunner
from orbitmq.client.offset_store import OffsetStore, ReadOffsetType
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import ConsumeOrderlyResult, ConsumeResult
from orbitmq.common.filter import SubscriptionData
from orbitmq.common.jsonbody import ObjectKeyMap, dumps_legacy
from orbitmq.common.message import MessageExt
from orbitmq.common.record import iter_records
from orbitmq.errors import CorruptRecord, HeaderError, OrbitMQError
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
)

PROP_NAMESERVER_ADDR = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE = "PROP_THREADPOOL_CORE_SIZE"
PROP_CONSUMEORDERLY = "PROP_CONSUMEORDERLY"
PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
PROP_CLIENT_VERSION = "PROP_CLIENT_VERSION"
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"
#: What PROP_CLIENT_VERSION says: the RocketMQ release whose protocol this client speaks.
CLIENT_VERSION_DESC = "V4_9_7"

CR_SUCCESS = "CR_SUCCESS"
CR_LATER = "CR_LATER"
CR_ROLLBACK = "CR_ROLLBACK"
CR_COMMIT = "CR_COMMIT"
CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
CR_RETURN_NULL = "CR_RETURN_NULL"

_CONCURRENT_RESULTS = {ConsumeResult.CONSUME_SUCCESS.value: CR_SUCCESS, ConsumeResult.RECONSUME_LATER.value: CR_LATER}
# Java's orderly statuses also include the deprecated COMMIT and ROLLBACK.
_ORDERLY_RESULTS = {
    ConsumeOrderlyResult.SUCCESS.value: CR_SUCCESS,
    ConsumeResult.CONSUME_SUCCESS.value: CR_SUCCESS,
    ConsumeOrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT.value: CR_LATER,
    "COMMIT": CR_COMMIT,
    "ROLLBACK": CR_ROLLBACK,
}


#: Options never reported: ACL secrets stay in the process (and the TLS settings, key password and all).
_SECRET_OPTIONS = frozenset({"access_key", "secret_key", "security_token", "tls"})


@runtime_checkable
class RunningInfoSource(Protocol):
    """A consumer that can describe itself (every consumer kind)."""

    async def running_info(self) -> dict[str, Any]: ...


@runtime_checkable
class DirectConsumer(Protocol):
    """A consumer with a listener that can consume one message on request (push consumers)."""

    async def consume_directly(self, msg: MessageExt, broker_name: str | None) -> dict[str, Any]: ...


async def describe_consumer(
    config: Any,
    subscriptions: Iterable[SubscriptionData],
    queues: Mapping[MessageQueue, ProcessQueue[Any]],
    offset_store: OffsetStore,
    properties: Mapping[str, str],
) -> dict[str, Any]:
    """The ConsumerRunningInfo fields common to every consumer kind (statusTable left empty).

    Properties are the config options under Java's camelCase names (secrets
    left out) plus `properties`; each queue's info carries the offset the
    store holds (memory first, then the store, as Java reads it).
    """
    props = {_camel(f.name): _prop_text(getattr(config, f.name))
             for f in dataclasses.fields(config)
             if f.name not in _SECRET_OPTIONS and getattr(config, f.name) is not None}
    props.update(properties)
    table = []
    for mq, pq in sorted(queues.items()):
        info = pq.info()
        info["commitOffset"] = await offset_store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE)
        table.append((mq.to_json(), info))
    subs = sorted(subscriptions, key=lambda sd: f"{sd.topic}@{sd.sub_string}")  # Java's TreeSet order
    return {
        "mqTable": ObjectKeyMap(table),
        "properties": props,
        "statusTable": {},
        "subscriptionSet": [sd.to_json_dict() for sd in subs],
    }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _prop_text(value: Any) -> str:
    """A config value as Java's object2Properties writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, (int, float, str)):
        return str(value)
    return type(value).__name__  # e.g. the allocation strategy


class TopicStats:
    """Pull and consume figures of one topic since the consumer started (Java's ConsumeStatus).

    Rates are averages over the time since the first event; failed messages
    are counted since start (Java counts the last hour).
    """

    __slots__ = ("consume_rt_ms", "consumes", "failed", "ok", "pull_rt_ms", "pulled", "pulls", "started")

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.pulls = 0
        self.pull_rt_ms = 0.0
        self.pulled = 0
        self.consumes = 0
        self.consume_rt_ms = 0.0
        self.ok = 0
        self.failed = 0

    def status(self) -> dict[str, Any]:
        elapsed = max(time.monotonic() - self.started, 1.0)
        return {
            "consumeFailedMsgs": self.failed,
            "consumeFailedTPS": self.failed / elapsed,
            "consumeOKTPS": self.ok / elapsed,
            "consumeRT": self.consume_rt_ms / self.consumes if self.consumes else 0.0,
            "pullRT": self.pull_rt_ms / self.pulls if self.pulls else 0.0,
            "pullTPS": self.pulled / elapsed,
        }


class ConsumerStats:
    """Per-topic `TopicStats` of one consumer group, fed by its pull loop and listener runner."""

    def __init__(self) -> None:
        self.topics: dict[str, TopicStats] = {}

    def _topic(self, topic: str) -> TopicStats:
        stats = self.topics.get(topic)
        if stats is None:
            stats = self.topics[topic] = TopicStats()
        return stats

    def pulled(self, topic: str, rt_ms: float, count: int) -> None:
        stats = self._topic(topic)
        stats.pulls += 1
        stats.pull_rt_ms += rt_ms
        stats.pulled += count

    def consumed(self, msgs: Sequence[MessageExt], result: Any, rt_ms: float, orderly: bool) -> None:
        """A listener call's outcome (`result` None: it raised or timed out)."""
        if not msgs:
            return
        stats = self._topic(msgs[0].topic)
        stats.consumes += 1
        stats.consume_rt_ms += rt_ms
        if classify(result, orderly) == CR_SUCCESS:
            stats.ok += len(msgs)
        else:
            stats.failed += len(msgs)

    def status(self, topic: str) -> dict[str, Any]:
        stats = self.topics.get(topic)
        return (stats or TopicStats()).status()


def classify(result: Any, orderly: bool) -> str:
    """The ConsumeMessageDirectlyResult code for a listener's return value."""
    if result is None:
        return CR_RETURN_NULL
    value = result.value if isinstance(result, (ConsumeResult, ConsumeOrderlyResult)) else result
    # An unknown value is treated as a failure by both consume services, so it reads as "later".
    return (_ORDERLY_RESULTS if orderly else _CONCURRENT_RESULTS).get(value, CR_LATER)


def _direct_context(msg: MessageExt, orderly: bool) -> object:
    """A fresh context for a listener that takes one; its choices are not acted on here."""
    mq = MessageQueue(msg.topic, "", msg.queue_id)
    return ConsumeOrderlyContext(mq) if orderly else ConsumeConcurrentlyContext(mq)


async def consume_once(runner: ListenerRunner, msg: MessageExt, orderly: bool) -> dict[str, Any]:
    """Run the listener on `msg` alone and describe the outcome (ConsumeMessageDirectlyResult).

    Unlike normal consumption nothing is committed or sent back: the admin
    tool only wants to see what the listener does with the message.
    """
    started = time.monotonic()
    remark: str | None = None
    async with runner.slots:
        try:
            args = [[msg], _direct_context(msg, orderly)] if runner.with_context else [[msg]]
            if runner.is_async:
                call = runner.listener(*args)
            else:
                call = asyncio.get_running_loop().run_in_executor(runner.executor, runner.listener, *args)
            # wait_for, not asyncio.timeout: the request handler may still run eagerly, outside a task.
            result = await asyncio.wait_for(call, runner.timeout_s)
            code = classify(result, orderly)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 -- the listener's own failure is the answer, not an error of ours
            code = CR_THROW_EXCEPTION
            remark = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return {
        "autoCommit": True,
        "consumeResult": code,
        "order": orderly,
        "remark": remark,
        "spentTimeMills": int((time.monotonic() - started) * 1000),
    }


def stack_dump() -> str:
    """Every thread's stack, the answer to `jstackEnable` (Java sends its jstack text)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    parts = []
    for ident, frame in sys._current_frames().items():
        parts.append(f'"{names.get(ident, ident)}"\n' + "".join(traceback.format_stack(frame)))
    return "\n".join(parts)


def _not_here(request: RemotingCommand, group: str) -> RemotingCommand:
    return request.response(ResponseCode.SYSTEM_ERROR, f"The Consumer Group <{group}> not exist in this consumer")


async def on_get_consumer_running_info(
    consumers: Mapping[str, Any], namesrv_addrs: Sequence[str], request: RemotingCommand, peer: Peer
) -> RemotingCommand:
    """GET_CONSUMER_RUNNING_INFO: the group's ConsumerRunningInfo as a fastjson body."""
    try:
        header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
    except HeaderError as exc:
        return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
    consumer = consumers.get(header.consumer_group)
    if not isinstance(consumer, RunningInfoSource):
        return _not_here(request, header.consumer_group)
    try:
        info = await consumer.running_info()
    except OrbitMQError as exc:  # e.g. the consumer is shutting down
        return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
    props = info["properties"]
    props[PROP_NAMESERVER_ADDR] = "".join(f"{addr};" for addr in namesrv_addrs)
    props.setdefault(PROP_CONSUME_TYPE, "CONSUME_PASSIVELY")
    props[PROP_CLIENT_VERSION] = CLIENT_VERSION_DESC
    if header.jstack_enable:
        info["jstack"] = stack_dump()
    return request.response(body=dumps_legacy(info))


async def on_consume_message_directly(
    consumers: Mapping[str, Any], request: RemotingCommand, peer: Peer
) -> RemotingCommand:
    """CONSUME_MESSAGE_DIRECTLY: run the group's listener on the stored record in the body."""
    try:
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
    except HeaderError as exc:
        return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
    try:
        msgs = list(iter_records(request.body_bytes()))
    except (CorruptRecord, ValueError) as exc:
        return request.response(ResponseCode.SYSTEM_ERROR, f"unreadable message in the request body: {exc}")
    if not msgs:
        return request.response(ResponseCode.SYSTEM_ERROR, "the request body holds no message")
    consumer = consumers.get(header.consumer_group)
    if not isinstance(consumer, DirectConsumer):
        return _not_here(request, header.consumer_group)
    try:
        result = await consumer.consume_directly(msgs[0], header.broker_name)
    except OrbitMQError as exc:
        return request.response(ResponseCode.SYSTEM_ERROR, str(exc))
    return request.response(body=dumps_legacy(result))
