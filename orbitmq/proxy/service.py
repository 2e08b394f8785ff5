"""`apache.rocketmq.v2.MessagingService` on top of the brokers' remoting protocol.

Every RPC answers with a `Status` (the protocol's codes, doc rocketmq-grpc-v2 §9); problems of
one request never reach another client. The brokers are found through the NameServer
(`Backend`); every queue a route lists points back at this proxy, which picks the broker and
queue itself (the RocketMQ 5 clients send no queue id).

Consumption uses the brokers' POP codes: ReceiveMessage → POP_MESSAGE over all queues of the
addressed broker, AckMessage → ACK_MESSAGE, ChangeInvisibleDuration →
CHANGE_MESSAGE_INVISIBLETIME, ForwardMessageToDeadLetterQueue → CONSUMER_SEND_MSG_BACK then
ACK_MESSAGE. Receipt handles are the POP extra info plus the commit-log offset (codec.py).

Each gRPC client is registered with the brokers as a 4.x client (HEART_BEAT on a connection of its
own, `clients.py`), so `orbitmq admin` lists it and the broker's CHECK_TRANSACTION_STATE for a
half message reaches its producer through the Telemetry stream.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp

from orbitmq.common import names
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.common.recall import ILLEGAL_OPERATION, parse_recall_handle
from orbitmq.common.record import iter_records
from orbitmq.common.route import TopicRouteData
from orbitmq.common.subscription_group import SubscriptionGroupConfig
from orbitmq.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE
from orbitmq.errors import BrokerError, CorruptRecord, OrbitMQError, RemotingError
from orbitmq.proxy import codec
from orbitmq.proxy.backend import CALLER, Backend
from orbitmq.proxy.clients import ClientRegistry, GrpcClient, Metadata, ProxyAuth
from orbitmq.proxy.codec import GrpcStatusError, ReceiptHandle, TransactionRef, real
from orbitmq.proxy.handlers import Malformed
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.pb import service_pb2_grpc as sgrpc
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.headers import (
    ConsumerSendMsgBackRequestHeader,
    EndTransactionRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)

log = logging.getLogger(__name__)

# RocketMQ 5's POP request codes, served by the broker (docs/pop.md).
POP_MESSAGE = RequestCode.POP_MESSAGE
ACK_MESSAGE = RequestCode.ACK_MESSAGE
CHANGE_MESSAGE_INVISIBLETIME = RequestCode.CHANGE_MESSAGE_INVISIBLETIME
POLLING_FULL = ResponseCode.POLLING_FULL
POLLING_TIMEOUT = ResponseCode.POLLING_TIMEOUT
INVALID_PARAMETER = ResponseCode.INVALID_PARAMETER

#: Long polling is clamped to 5–20 s, as the Apache proxy does.
MIN_POLL_MS = 5_000
MAX_POLL_MS = 20_000
#: Invisible time bounds of a receive (10 s – 12 h) and the default with auto_renew.
MIN_INVISIBLE_MS = 10_000
MAX_INVISIBLE_MS = 12 * 3600_000
AUTO_RENEW_INVISIBLE_MS = 60_000
#: Auto-renewed handles due within this window are renewed; renewal stops after MAX_RENEW_MS.
RENEW_WINDOW_MS = 10_000
MAX_RENEW_MS = 3 * 3600_000
#: Producers' attempts (the settings' exponential backoff).
SEND_ATTEMPTS = 3

_OK = pb.Status(code=pb.OK, message="OK")


@dataclass(slots=True)
class Renewal:
    """A message received with auto_renew that the proxy keeps invisible until the client acks or nacks it."""

    md: Metadata
    topic: str
    handle: ReceiptHandle
    started: float
    count: int = 0
    #: Set while a renewal's CHANGE_MESSAGE_INVISIBLETIME is in flight: an ack or change arriving then
    #: waits for it, since the broker has already moved the message to the handle it will answer.
    inflight: asyncio.Future[None] | None = None
    #: The message's reconsume times when received (its group's retry policy gives the delay when renewal stops).
    reconsume_times: int = 0


def status(code: int, message: str) -> pb.Status:
    return pb.Status(code=code, message=message)  # type: ignore[arg-type]


def _broker_status(exc: BrokerError | int, remark: str | None = None) -> GrpcStatusError:
    """A broker's response code as the protocol's status."""
    code = exc.code if isinstance(exc, BrokerError) else exc
    text = (exc.remark if isinstance(exc, BrokerError) else remark) or f"broker answered code {code}"
    table: dict[int, int] = {
        ResponseCode.TOPIC_NOT_EXIST: pb.TOPIC_NOT_FOUND,
        ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: pb.CONSUMER_GROUP_NOT_FOUND,
        ResponseCode.NO_PERMISSION: pb.FORBIDDEN,
        ResponseCode.MESSAGE_ILLEGAL: pb.BAD_REQUEST,
        ResponseCode.SUBSCRIPTION_PARSE_FAILED: pb.ILLEGAL_FILTER_EXPRESSION,
        ResponseCode.SYSTEM_BUSY: pb.TOO_MANY_REQUESTS,
        ResponseCode.FLOW_CONTROL: pb.TOO_MANY_REQUESTS,
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED: pb.NOT_IMPLEMENTED,
        ResponseCode.FLUSH_DISK_TIMEOUT: pb.MASTER_PERSISTENCE_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT: pb.SLAVE_PERSISTENCE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE: pb.HA_NOT_AVAILABLE,
        POLLING_FULL: pb.TOO_MANY_REQUESTS,
        INVALID_PARAMETER: pb.BAD_REQUEST,
    }
    if code == ResponseCode.SYSTEM_ERROR and text.startswith("No permission"):
        return GrpcStatusError(pb.FORBIDDEN, text)  # the broker's ACL refusal (SYSTEM_ERROR, as RocketMQ 4.x)
    return GrpcStatusError(table.get(code, pb.INTERNAL_SERVER_ERROR), text)


def _error_status(exc: BaseException) -> pb.Status:
    if isinstance(exc, GrpcStatusError):
        return status(exc.code, exc.message)
    if isinstance(exc, BrokerError):
        err = _broker_status(exc)
        return status(err.code, err.message)
    if isinstance(exc, RemotingError):
        return status(pb.PROXY_TIMEOUT, f"the broker did not answer: {exc}")
    if isinstance(exc, OrbitMQError):
        return status(pb.INTERNAL_SERVER_ERROR, str(exc))
    log.exception("unexpected error in a gRPC call", exc_info=exc)
    return status(pb.INTERNAL_SERVER_ERROR, "internal error in the proxy")


def _ms(duration: Any) -> int:
    return int(duration.seconds) * 1000 + int(duration.nanos) // 1_000_000


class MessagingService(sgrpc.MessagingServiceServicer):
    def __init__(
        self,
        backend: Backend,
        advertised: tuple[str, int],
        *,
        auth: ProxyAuth | None = None,
        max_body_size: int = 4 * 1024 * 1024,
        max_delay_ms: int = 86_400_000,
    ) -> None:
        self.backend = backend
        self.advertised = advertised
        self.auth = auth or ProxyAuth(None)
        self.max_body_size = max_body_size
        self.max_delay_ms = max_delay_ms
        self.clients = ClientRegistry(backend, self)
        self._rr = 0
        #: Invisible time of a receive with auto_renew and no duration; renewed while within `renew_window_ms`.
        self.auto_renew_ms = AUTO_RENEW_INVISIBLE_MS
        self.renew_window_ms = RENEW_WINDOW_MS
        self.max_renew_ms = MAX_RENEW_MS
        #: (client id, group, message id) -> the newest handle of a message the proxy keeps invisible.
        self.renewals: dict[tuple[str, str, str], Renewal] = {}

    # --- helpers -----------------------------------------------------------------------------

    def _meta(self, context: grpc.aio.ServicerContext[Any, Any]) -> Metadata:
        """The call's headers, its signature checked; its account signs the lookups made for it (CALLER)."""
        md = Metadata.from_context(context)
        self.auth.check(md)
        CALLER.set(self.auth.credentials(md))
        return md

    def _endpoints(self, requested: pb.Endpoints | None = None) -> pb.Endpoints:
        if requested is not None and requested.addresses:
            out = pb.Endpoints()
            out.CopyFrom(requested)
            if out.scheme == pb.ADDRESS_SCHEME_UNSPECIFIED:
                out.scheme = pb.IPv4
            return out
        host, port = self.advertised
        scheme = pb.IPv4 if host.replace(".", "").isdigit() else pb.DOMAIN_NAME
        return pb.Endpoints(scheme=scheme, addresses=[pb.Address(host=host, port=port)])  # type: ignore[arg-type]

    async def _route(self, topic: str) -> TopicRouteData:
        if names.validate_topic(topic) is not None:
            raise GrpcStatusError(pb.ILLEGAL_TOPIC, f"illegal topic name {topic!r}")
        try:
            route = await self.backend.route(topic)
        except BrokerError as exc:
            if exc.code == ResponseCode.TOPIC_NOT_EXIST:
                raise GrpcStatusError(pb.TOPIC_NOT_FOUND, f"topic {topic} does not exist") from None
            raise
        if not route.queue_datas:
            raise GrpcStatusError(pb.TOPIC_NOT_FOUND, f"topic {topic} does not exist")
        return route

    async def accepted_types(self, topic: str, route: TopicRouteData) -> tuple[int, ...]:
        for bd in route.broker_datas:
            if bd.master_addr:
                meta = await self.backend.meta(bd.master_addr)
                attrs = meta.topic_attributes.get(topic)
                if attrs:
                    return codec.accepted_types(attrs.get(codec.MESSAGE_TYPE_ATTRIBUTE))
        return codec.ALL_TYPES

    def _masters(self, route: TopicRouteData) -> dict[str, str]:
        return {bd.broker_name: bd.master_addr for bd in route.broker_datas if bd.master_addr}

    async def _group_check(self, group: str) -> None:
        if names.validate_group(group) is not None:
            raise GrpcStatusError(pb.ILLEGAL_CONSUMER_GROUP, f"illegal consumer group {group!r}")

    async def _is_orderly(self, addr: str, group: str) -> bool:
        """FIFO consumption is the group's setting, as in RocketMQ 5: its SubscriptionGroupConfig on the
        broker says consumeMessageOrderly (`updateSubGroup -o true`). The topic's message.type only says
        what may be sent to it: a FIFO topic read by another group is consumed concurrently, and an
        orderly group reads any topic in queue order."""
        return group in (await self.backend.meta(addr)).orderly_groups

    async def _group_config(self, addr: str, group: str) -> SubscriptionGroupConfig:
        """The group's SubscriptionGroupConfig on a broker (its defaults when the broker has none yet, as
        RocketMQ 5's proxy starts a consumer's settings from a default config)."""
        found = (await self.backend.meta(addr)).group_configs.get(group)
        return found if found is not None else SubscriptionGroupConfig(group)

    async def _subscribed_group_config(self, settings: pb.Settings, group: str) -> SubscriptionGroupConfig:
        """The group's config on the first broker (by name) serving a subscribed topic that has it."""
        for entry in settings.subscription.subscriptions:
            try:
                route = await self.backend.route(real(entry.topic))
            except OrbitMQError:
                continue
            for _, addr in sorted(self._masters(route).items()):
                found = (await self.backend.meta(addr)).group_configs.get(group)
                if found is not None:
                    return found
        return SubscriptionGroupConfig(group)

    # --- route and assignment ----------------------------------------------------------------

    async def QueryRoute(self, request: spb.QueryRouteRequest, context: Any) -> spb.QueryRouteResponse:
        try:
            self._meta(context)
            topic = real(request.topic)
            route = await self._route(topic)
            types = await self.accepted_types(topic, route)
            endpoints = self._endpoints(request.endpoints)
            masters = self._masters(route)
            queues: list[pb.MessageQueue] = []
            for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
                if qd.broker_name not in masters:
                    continue
                for qid in range(max(qd.read_queue_nums, qd.write_queue_nums)):
                    readable = qid < qd.read_queue_nums and names.is_readable(qd.perm)
                    writable = qid < qd.write_queue_nums and names.is_writeable(qd.perm)
                    perm = (pb.READ_WRITE if readable and writable else pb.READ if readable
                            else pb.WRITE if writable else pb.NONE)
                    mq = pb.MessageQueue(id=qid, permission=perm, accept_message_types=types)  # type: ignore[arg-type]
                    mq.topic.CopyFrom(request.topic)
                    mq.broker.name = qd.broker_name
                    mq.broker.id = 0
                    mq.broker.endpoints.CopyFrom(endpoints)
                    queues.append(mq)
            if not queues:
                raise GrpcStatusError(pb.TOPIC_NOT_FOUND, f"topic {topic} has no queue on a live master")
            return spb.QueryRouteResponse(status=_OK, message_queues=queues)
        except Exception as exc:  # noqa: BLE001 - every failure is a status
            return spb.QueryRouteResponse(status=_error_status(exc))

    async def QueryAssignment(
        self, request: spb.QueryAssignmentRequest, context: Any
    ) -> spb.QueryAssignmentResponse:
        try:
            self._meta(context)
            await self._group_check(real(request.group))
            route = await self._route(real(request.topic))
            endpoints = self._endpoints(request.endpoints)
            out: list[pb.Assignment] = []
            for name, addr in sorted(self._masters(route).items()):
                qd = next((q for q in route.queue_datas if q.broker_name == name), None)
                if qd is None or not names.is_readable(qd.perm) or qd.read_queue_nums <= 0:
                    continue
                orderly = await self._is_orderly(addr, real(request.group))
                ids = range(qd.read_queue_nums) if orderly else [-1]
                for qid in ids:
                    mq = pb.MessageQueue(id=qid, permission=pb.READ_WRITE)
                    mq.topic.CopyFrom(request.topic)
                    mq.broker.name = name
                    mq.broker.endpoints.CopyFrom(endpoints)
                    out.append(pb.Assignment(message_queue=mq))
            if not out:
                raise GrpcStatusError(pb.FORBIDDEN, "no readable queue")
            return spb.QueryAssignmentResponse(status=_OK, assignments=out)
        except Exception as exc:  # noqa: BLE001
            return spb.QueryAssignmentResponse(status=_error_status(exc))

    # --- clients -----------------------------------------------------------------------------

    async def Heartbeat(self, request: spb.HeartbeatRequest, context: Any) -> spb.HeartbeatResponse:
        try:
            md = self._meta(context)
            client = self.clients.get_or_create(md)
            if request.HasField("group"):
                await self._group_check(real(request.group))
                client.group = real(request.group)
            if request.client_type:
                client.client_type = request.client_type
            await client.heartbeat()
            return spb.HeartbeatResponse(status=_OK)
        except Exception as exc:  # noqa: BLE001
            return spb.HeartbeatResponse(status=_error_status(exc))

    async def NotifyClientTermination(
        self, request: spb.NotifyClientTerminationRequest, context: Any
    ) -> spb.NotifyClientTerminationResponse:
        try:
            md = self._meta(context)
            await self.clients.terminate(md.client_id)
            return spb.NotifyClientTerminationResponse(status=_OK)
        except Exception as exc:  # noqa: BLE001
            return spb.NotifyClientTerminationResponse(status=_error_status(exc))

    async def Telemetry(
        self, request_iterator: AsyncIterator[spb.TelemetryCommand], context: Any
    ) -> AsyncIterator[spb.TelemetryCommand]:
        try:
            md = self._meta(context)
        except GrpcStatusError as exc:
            yield spb.TelemetryCommand(status=status(exc.code, exc.message))
            return
        client = self.clients.get_or_create(md)
        outbox: asyncio.Queue[spb.TelemetryCommand | None] = asyncio.Queue()
        client.streams.append(outbox)

        async def read() -> None:
            try:
                async for command in request_iterator:
                    if isinstance(command, Malformed):
                        outbox.put_nowait(spb.TelemetryCommand(status=command.status()))
                        continue
                    reply = await self.on_telemetry(client, command)
                    if reply is not None:
                        outbox.put_nowait(reply)
            except (grpc.RpcError, asyncio.CancelledError):
                pass
            except Exception as exc:  # noqa: BLE001 - a broken command must not break the stream
                outbox.put_nowait(spb.TelemetryCommand(status=_error_status(exc)))
            finally:
                outbox.put_nowait(None)

        reader = asyncio.get_running_loop().create_task(read())
        try:
            while True:
                item = await outbox.get()
                if item is None:
                    break
                yield item
        finally:
            reader.cancel()
            if outbox in client.streams:
                client.streams.remove(outbox)

    async def on_telemetry(self, client: GrpcClient, command: spb.TelemetryCommand) -> spb.TelemetryCommand | None:
        """The answer to one command a client wrote (None for its answers to our own commands)."""
        which = command.WhichOneof("command")
        if which == "settings":
            return spb.TelemetryCommand(status=_OK, settings=await self.settings_reply(client, command.settings))
        if which == "thread_stack_trace":
            client.answered(command.thread_stack_trace.nonce, command.thread_stack_trace.thread_stack_trace)
            return None
        if which == "verify_message_result":
            client.answered(command.verify_message_result.nonce, "verified by the client")
            return None
        return spb.TelemetryCommand(status=status(pb.BAD_REQUEST, f"telemetry command {which} is not one a client sends"))

    async def settings_reply(self, client: GrpcClient, settings: pb.Settings) -> pb.Settings:
        if settings.client_type == pb.CLIENT_TYPE_UNSPECIFIED:
            raise GrpcStatusError(pb.UNRECOGNIZED_CLIENT_TYPE, "settings without a client type")
        client.apply_settings(settings)
        reply = pb.Settings()
        reply.CopyFrom(settings)
        reply.metric.on = False
        reply.metric.ClearField("endpoints")
        if settings.WhichOneof("pub_sub") == "publishing":
            reply.publishing.max_body_size = self.max_body_size
            reply.publishing.validate_message_type = True
            reply.backoff_policy.max_attempts = SEND_ATTEMPTS
            eb = reply.backoff_policy.exponential_backoff
            eb.initial.FromMilliseconds(10)
            eb.max.FromSeconds(1)
            eb.multiplier = 2.0
        elif settings.WhichOneof("pub_sub") == "subscription":
            sub = reply.subscription
            group = real(sub.group)
            fifo = False
            for entry in settings.subscription.subscriptions:
                try:
                    route = await self.backend.route(real(entry.topic))
                except OrbitMQError:
                    continue
                for addr in self._masters(route).values():
                    fifo = fifo or await self._is_orderly(addr, group)
            sub.fifo = client.fifo = fifo
            sub.receive_batch_size = 32
            polling = _ms(sub.long_polling_timeout) if sub.HasField("long_polling_timeout") else MAX_POLL_MS
            sub.long_polling_timeout.FromMilliseconds(min(MAX_POLL_MS, max(MIN_POLL_MS, polling)))
            sub.lite_subscription_quota = 0
            sub.max_lite_topic_size = 64
            codec.set_backoff(reply.backoff_policy, await self._subscribed_group_config(settings, group))
        return reply

    # --- sending -----------------------------------------------------------------------------

    async def SendMessage(self, request: spb.SendMessageRequest, context: Any) -> spb.SendMessageResponse:
        try:
            md = self._meta(context)
            if not request.messages:
                raise GrpcStatusError(pb.BAD_REQUEST, "no message to send")
            entries = [await self._send_one(md, m) for m in request.messages]
            if len(entries) == 1:
                return spb.SendMessageResponse(status=entries[0].status, entries=entries)
            ok = all(e.status.code == pb.OK for e in entries)
            return spb.SendMessageResponse(status=_OK if ok else status(pb.MULTIPLE_RESULTS, "see the entries"),
                                           entries=entries)
        except Exception as exc:  # noqa: BLE001
            return spb.SendMessageResponse(status=_error_status(exc))

    async def _send_one(self, md: Metadata, message: pb.Message) -> spb.SendResultEntry:
        try:
            out = codec.to_remoting(message, max_body_size=self.max_body_size, max_delay_ms=self.max_delay_ms)
            route = await self._route(out.topic)
            types = await self.accepted_types(out.topic, route)
            if out.message_type not in types:
                raise GrpcStatusError(
                    pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                    f"topic {out.topic} accepts {', '.join(codec.type_name(t) for t in types)}, "
                    f"not {codec.type_name(out.message_type)} messages",
                )
            masters = self._masters(route)
            targets = [(qd.broker_name, qid) for qd in sorted(route.queue_datas, key=lambda q: q.broker_name)
                       if qd.broker_name in masters and names.is_writeable(qd.perm)
                       for qid in range(qd.write_queue_nums)]
            if not targets:
                raise GrpcStatusError(pb.FORBIDDEN, f"topic {out.topic} has no writable queue")
            if out.message_group is not None:
                digest = hashlib.sha256(out.message_group.encode()).digest()
                broker_name, queue_id = targets[int.from_bytes(digest[:8], "big") % len(targets)]
            else:
                self._rr += 1
                broker_name, queue_id = targets[self._rr % len(targets)]
            header = SendMessageRequestHeader(
                producer_group=out.topic,
                topic=out.topic,
                default_topic="TBW102",
                default_topic_queue_nums=4,
                queue_id=queue_id,
                sys_flag=out.sys_flag,
                born_timestamp=out.born_timestamp_ms,
                flag=0,
                properties=codec.mc.encode_properties(out.properties),
                reconsume_times=0,
                unit_mode=False,
                batch=False,
                bname=broker_name,
            )
            api = self.backend.api(self.auth.credentials(md))
            resp = await api.send(masters[broker_name], RequestCode.SEND_MESSAGE_V2, header.to_compact_fields(),
                                  out.body, api.timeout)
            if resp.code not in (ResponseCode.SUCCESS, ResponseCode.FLUSH_DISK_TIMEOUT,
                                 ResponseCode.FLUSH_SLAVE_TIMEOUT, ResponseCode.SLAVE_NOT_AVAILABLE):
                raise _broker_status(resp.code, resp.remark)
            rh = SendMessageResponseHeader.from_ext_fields(resp.ext_fields)
            entry = spb.SendResultEntry(status=_OK, message_id=out.message_id, offset=rh.queue_offset,
                                        recall_handle=resp.field("recallHandle") or "")
            if resp.code != ResponseCode.SUCCESS:  # stored, but not flushed or replicated in time
                late = _broker_status(resp.code, resp.remark)
                entry.status.CopyFrom(status(late.code, late.message))
            if out.message_type == pb.TRANSACTION:
                clo = parse_offset_msg_id(rh.msg_id).commit_log_offset
                entry.transaction_id = TransactionRef(broker_name, clo, rh.queue_offset, out.topic).encode()
            return entry
        except Exception as exc:  # noqa: BLE001
            return spb.SendResultEntry(status=_error_status(exc), message_id=message.system_properties.message_id)

    async def EndTransaction(self, request: spb.EndTransactionRequest, context: Any) -> spb.EndTransactionResponse:
        try:
            md = self._meta(context)
            ref = TransactionRef.decode(request.transaction_id)
            if request.resolution == pb.COMMIT:
                kind = TRANSACTION_COMMIT_TYPE
            elif request.resolution == pb.ROLLBACK:
                kind = TRANSACTION_ROLLBACK_TYPE
            else:
                raise GrpcStatusError(pb.BAD_REQUEST, "the resolution must be COMMIT or ROLLBACK")
            if not request.message_id:
                raise GrpcStatusError(pb.ILLEGAL_MESSAGE_ID, "the message id is empty")
            addr = await self.backend.master_addr(real(request.topic) or ref.producer_group, ref.broker_name)
            if addr is None:
                raise GrpcStatusError(pb.INVALID_TRANSACTION_ID, f"broker {ref.broker_name} holds no such transaction")
            header = EndTransactionRequestHeader(
                producer_group=ref.producer_group,
                tran_state_table_offset=ref.queue_offset,
                commit_log_offset=ref.commit_log_offset,
                commit_or_rollback=kind,
                msg_id=request.message_id,
                from_transaction_check=request.source == pb.SOURCE_SERVER_CHECK,
                transaction_id=request.message_id,
                bname=ref.broker_name,
            )
            api = self.backend.api(self.auth.credentials(md))
            resp = await api.invoke(addr, RequestCode.END_TRANSACTION, header)
            if resp.code != ResponseCode.SUCCESS:
                raise _broker_status(resp.code, resp.remark)
            return spb.EndTransactionResponse(status=_OK)
        except Exception as exc:  # noqa: BLE001
            return spb.EndTransactionResponse(status=_error_status(exc))

    # --- consuming ---------------------------------------------------------------------------

    async def ReceiveMessage(
        self, request: spb.ReceiveMessageRequest, context: Any
    ) -> AsyncIterator[spb.ReceiveMessageResponse]:
        try:
            md = self._meta(context)
            group = real(request.group)
            await self._group_check(group)
            topic = real(request.message_queue.topic)
            route = await self._route(topic)
            masters = self._masters(route)
            broker_name = request.message_queue.broker.name
            if broker_name not in masters:
                if request.message_queue.broker.name:
                    raise GrpcStatusError(pb.NOT_FOUND, f"broker {broker_name} does not serve topic {topic}")
                broker_name = min(masters)
            addr = masters[broker_name]
            if request.HasField("invisible_duration"):
                invisible = _ms(request.invisible_duration)
                if not MIN_INVISIBLE_MS <= invisible <= MAX_INVISIBLE_MS:
                    raise GrpcStatusError(pb.ILLEGAL_INVISIBLE_TIME,
                                          "the invisible duration must be between 10 s and 12 h")
            elif request.auto_renew:
                invisible = self.auto_renew_ms
            else:
                raise GrpcStatusError(pb.ILLEGAL_INVISIBLE_TIME, "no invisible duration and no auto renew")
            if request.batch_size <= 0:
                raise GrpcStatusError(pb.BAD_REQUEST, "the batch size must be positive")
            poll_ms = _ms(request.long_polling_timeout) if request.HasField("long_polling_timeout") else MIN_POLL_MS
            poll_ms = min(MAX_POLL_MS, max(MIN_POLL_MS, poll_ms))
            deadline = context.time_remaining() if hasattr(context, "time_remaining") else None
            if deadline is not None:
                # Answer before the client's deadline (it is request timeout + polling time).
                poll_ms = max(0, min(poll_ms, int(deadline * 1000) - 1500))
            fexp = request.filter_expression
            fields = {
                "consumerGroup": group,
                "topic": topic,
                "queueId": "-1",
                "maxMsgNums": str(min(request.batch_size, 32)),
                "invisibleTime": str(invisible),
                "pollTime": str(poll_ms),
                "bornTime": str(int(time.time() * 1000)),
                "initMode": "1",
                "expType": "SQL92" if fexp.type == pb.SQL else "TAG",
                "exp": fexp.expression or "*",
                "order": "true" if await self._is_orderly(addr, group) else "false",
            }
            if request.HasField("attempt_id"):
                fields["attemptId"] = request.attempt_id
            max_attempts = (await self._group_config(addr, group)).max_delivery_attempts
            client = self.clients.get(md.client_id)
            if client is not None and client.group is None:
                client.group = group
            api = self.backend.api(self.auth.credentials(md))
            resp = await api.invoke(addr, POP_MESSAGE, fields, timeout=poll_ms / 1000 + api.timeout)
        except Exception as exc:  # noqa: BLE001
            yield spb.ReceiveMessageResponse(status=_error_status(exc))
            return
        if resp.code in (ResponseCode.NO_MESSAGE, POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND):
            yield spb.ReceiveMessageResponse(status=status(pb.MESSAGE_NOT_FOUND, "no new message"))
            return
        if resp.code != ResponseCode.SUCCESS:
            yield spb.ReceiveMessageResponse(status=_error_status(_broker_status(resp.code, resp.remark)))
            return
        try:
            msgs = list(iter_records(resp.body_bytes()))
        except (CorruptRecord, ValueError) as exc:
            yield spb.ReceiveMessageResponse(status=status(pb.INTERNAL_SERVER_ERROR, f"unreadable POP answer: {exc}"))
            return
        rfields = dict(resp.ext_fields or {})
        handles = codec.handles_from_pop(rfields, msgs, broker_name)
        renew = request.auto_renew and not request.HasField("invisible_duration")
        if not msgs:
            yield spb.ReceiveMessageResponse(status=status(pb.MESSAGE_NOT_FOUND, "no new message"))
            return
        yield spb.ReceiveMessageResponse(status=_OK)
        for msg, handle in zip(msgs, handles, strict=True):
            if msg.reconsume_times >= max_attempts:  # as RocketMQ 5's PopMessageResultFilterImpl
                try:
                    await self._to_dlq(md, group, topic, handle, msg.msg_id or "", max_attempts)
                except Exception as exc:  # noqa: BLE001
                    log.warning("cannot move message %s of %s to the DLQ: %s", msg.msg_id, group, exc)
                continue
            out = codec.to_grpc(msg, namespace=request.message_queue.topic.resource_namespace,
                                topic=request.message_queue.topic.name,
                                receipt_handle=handle.encode(), invisible_ms=handle.invisible_time)
            if renew:
                key = (md.client_id, group, out.system_properties.message_id)
                self.renewals[key] = Renewal(md, topic, handle, time.monotonic(), reconsume_times=msg.reconsume_times)
            yield spb.ReceiveMessageResponse(message=out)
        ts = Timestamp()
        ts.GetCurrentTime()
        yield spb.ReceiveMessageResponse(delivery_timestamp=ts)

    async def _handle_call(
        self, md: Metadata, group: str, topic: str, text: str, code: int, extra: dict[str, str] | None = None
    ) -> tuple[ReceiptHandle, Any]:
        await self._group_check(group)
        handle = ReceiptHandle.decode(text)
        if handle.next_visible_time <= int(time.time() * 1000):
            raise GrpcStatusError(pb.INVALID_RECEIPT_HANDLE, "the receipt handle is expired")
        addr = await self.backend.master_addr(topic, handle.broker_name)
        if addr is None:
            raise GrpcStatusError(pb.INVALID_RECEIPT_HANDLE, f"broker {handle.broker_name} does not serve {topic}")
        fields = {
            "consumerGroup": group,
            "topic": handle.real_topic(topic, group),
            "queueId": str(handle.queue_id),
            "offset": str(handle.offset),
            "extraInfo": handle.extra_info,
            **(extra or {}),
        }
        resp = await self.backend.api(self.auth.credentials(md)).invoke(addr, code, fields)
        if resp.code in (ResponseCode.NO_MESSAGE, ResponseCode.MESSAGE_ILLEGAL):
            raise GrpcStatusError(pb.INVALID_RECEIPT_HANDLE, resp.remark or "the receipt handle names no message")
        if resp.code != ResponseCode.SUCCESS:
            raise _broker_status(resp.code, resp.remark)
        return handle, resp

    async def AckMessage(self, request: spb.AckMessageRequest, context: Any) -> spb.AckMessageResponse:
        try:
            md = self._meta(context)
            if not request.entries:
                raise GrpcStatusError(pb.BAD_REQUEST, "no entry to acknowledge")
            group, topic = real(request.group), real(request.topic)

            async def ack(entry: spb.AckMessageEntry) -> spb.AckMessageResultEntry:
                try:
                    handle = await self._latest_handle(md, group, entry.message_id, entry.receipt_handle)
                    await self._handle_call(md, group, topic, handle, ACK_MESSAGE)
                    st = _OK
                except Exception as exc:  # noqa: BLE001
                    st = _error_status(exc)
                return spb.AckMessageResultEntry(message_id=entry.message_id, receipt_handle=entry.receipt_handle,
                                                 status=st)

            # The entries' ACK_MESSAGE requests are in flight together (one round trip for a batch, not one each).
            results = list(await asyncio.gather(*(ack(e) for e in request.entries)))
            if len(results) == 1:
                top = results[0].status
            else:
                top = _OK if all(r.status.code == pb.OK for r in results) else status(pb.MULTIPLE_RESULTS, "see the entries")
            return spb.AckMessageResponse(status=top, entries=results)
        except Exception as exc:  # noqa: BLE001
            return spb.AckMessageResponse(status=_error_status(exc))

    async def ChangeInvisibleDuration(
        self, request: spb.ChangeInvisibleDurationRequest, context: Any
    ) -> spb.ChangeInvisibleDurationResponse:
        try:
            md = self._meta(context)
            invisible = _ms(request.invisible_duration)
            if not 0 <= invisible <= MAX_INVISIBLE_MS:
                raise GrpcStatusError(pb.ILLEGAL_INVISIBLE_TIME, "the invisible duration must be between 0 and 12 h")
            current = await self._latest_handle(
                md, real(request.group), request.message_id, request.receipt_handle
            )
            handle, resp = await self._handle_call(
                md, real(request.group), real(request.topic), current, CHANGE_MESSAGE_INVISIBLETIME,
                {"invisibleTime": str(invisible)},
            )
            new = self._changed_handle(handle, resp, invisible)
            return spb.ChangeInvisibleDurationResponse(status=_OK, receipt_handle=new.encode())
        except Exception as exc:  # noqa: BLE001
            return spb.ChangeInvisibleDurationResponse(status=_error_status(exc), receipt_handle=request.receipt_handle)

    async def _latest_handle(self, md: Metadata, group: str, message_id: str, given: str) -> str:
        """The handle to use for a client's ack or change: the proxy's newest one when it renews the message
        (the client still holds the first), and renewal stops there. A renewal in flight is waited for:
        acking the handle it is replacing would leave the broker's new checkpoint to revive the message."""
        renewal = self.renewals.pop((md.client_id, group, message_id), None)
        if renewal is None:
            return given
        if renewal.inflight is not None:
            await asyncio.shield(renewal.inflight)
        return renewal.handle.encode()

    async def renew_due(self) -> int:
        """Renew the auto-renewed handles that fall due soon (CHANGE_MESSAGE_INVISIBLETIME); the count renewed."""
        now_ms = int(time.time() * 1000)
        renewed = 0
        for key, renewal in list(self.renewals.items()):
            if self.renewals.get(key) is not renewal:
                continue  # acked (or received again) while this pass renewed others: renewing it would revive it
            if renewal.handle.next_visible_time - now_ms > self.renew_window_ms:
                continue
            CALLER.set(self.auth.credentials(renewal.md))
            if renewal.md.client_id not in self.clients.clients:
                self.renewals.pop(key, None)  # left to expire and come back
                continue
            stop = (time.monotonic() - renewal.started) * 1000 > self.max_renew_ms
            inflight = renewal.inflight = asyncio.get_running_loop().create_future()
            invisible = self.auto_renew_ms
            try:
                if stop:
                    # As RocketMQ 5's proxy: renewed for its maximum time, the message comes back after the
                    # group's retry policy delay for its reconsume times (a retry, as if the client had nacked).
                    addr = await self.backend.master_addr(renewal.topic, renewal.handle.broker_name)
                    group_config = await self._group_config(addr, key[1]) if addr else SubscriptionGroupConfig(key[1])
                    invisible = group_config.group_retry_policy.next_delay_ms(renewal.reconsume_times)
                handle, resp = await self._handle_call(
                    renewal.md, key[1], renewal.topic, renewal.handle.encode(), CHANGE_MESSAGE_INVISIBLETIME,
                    {"invisibleTime": str(invisible)})
            except Exception as exc:  # noqa: BLE001 - one failed renewal must not stop the others
                log.info("cannot renew message %s of %s: %s", key[2], key[1], _error_status(exc).message)
                self.renewals.pop(key, None)
            else:
                # Also when acked meanwhile: that ack waits to use this handle.
                renewal.handle = self._changed_handle(handle, resp, invisible)
                if self.renewals.get(key) is renewal:
                    if stop:
                        del self.renewals[key]
                    else:
                        renewal.count += 1
                        renewed += 1
            finally:
                renewal.inflight = None
                inflight.set_result(None)
        return renewed

    @staticmethod
    def _changed_handle(handle: ReceiptHandle, resp: Any, invisible: int) -> ReceiptHandle:
        f = resp.ext_fields or {}
        return ReceiptHandle(handle.offset, int(f.get("popTime") or time.time() * 1000),
                             int(f.get("invisibleTime") or invisible), int(f.get("reviveQid") or handle.revive_qid),
                             handle.topic_type, handle.broker_name, handle.queue_id, handle.offset,
                             handle.commit_log_offset)

    async def _to_dlq(
        self, md: Metadata, group: str, topic: str, handle: ReceiptHandle, message_id: str, max_attempts: int
    ) -> None:
        if handle.commit_log_offset < 0:
            raise GrpcStatusError(pb.INVALID_RECEIPT_HANDLE, "the receipt handle has no commit log offset")
        addr = await self.backend.master_addr(topic, handle.broker_name)
        if addr is None:
            raise GrpcStatusError(pb.INVALID_RECEIPT_HANDLE, f"broker {handle.broker_name} does not serve {topic}")
        header = ConsumerSendMsgBackRequestHeader(
            offset=handle.commit_log_offset, group=group, delay_level=-1, origin_msg_id=message_id,
            origin_topic=topic, unit_mode=False, max_reconsume_times=max_attempts - 1, bname=handle.broker_name,
        )
        api = self.backend.api(self.auth.credentials(md))
        resp = await api.invoke(addr, RequestCode.CONSUMER_SEND_MSG_BACK, header)
        if resp.code != ResponseCode.SUCCESS:
            raise _broker_status(resp.code, resp.remark)
        fields = {"consumerGroup": group, "topic": handle.real_topic(topic, group), "queueId": str(handle.queue_id),
                  "offset": str(handle.offset), "extraInfo": handle.extra_info}
        resp = await api.invoke(addr, ACK_MESSAGE, fields)
        if resp.code not in (ResponseCode.SUCCESS, ResponseCode.NO_MESSAGE):
            raise _broker_status(resp.code, resp.remark)

    async def ForwardMessageToDeadLetterQueue(
        self, request: spb.ForwardMessageToDeadLetterQueueRequest, context: Any
    ) -> spb.ForwardMessageToDeadLetterQueueResponse:
        try:
            md = self._meta(context)
            await self._group_check(real(request.group))
            handle = ReceiptHandle.decode(request.receipt_handle)
            max_attempts = request.max_delivery_attempts
            if not max_attempts:
                addr = await self.backend.master_addr(real(request.topic), handle.broker_name)
                group_config = await self._group_config(addr, real(request.group)) if addr else None
                max_attempts = (group_config or SubscriptionGroupConfig(real(request.group))).max_delivery_attempts
            await self._to_dlq(md, real(request.group), real(request.topic), handle, request.message_id, max_attempts)
            return spb.ForwardMessageToDeadLetterQueueResponse(status=_OK)
        except Exception as exc:  # noqa: BLE001
            return spb.ForwardMessageToDeadLetterQueueResponse(status=_error_status(exc))

    # --- RPCs this server does not offer -----------------------------------------------------

    async def PullMessage(self, request: Any, context: Any) -> AsyncIterator[spb.PullMessageResponse]:
        yield spb.PullMessageResponse(status=status(pb.NOT_IMPLEMENTED, "PullMessage is not served; use ReceiveMessage"))

    async def UpdateOffset(self, request: Any, context: Any) -> spb.UpdateOffsetResponse:
        return spb.UpdateOffsetResponse(status=status(pb.NOT_IMPLEMENTED, "UpdateOffset is not served"))

    async def GetOffset(self, request: Any, context: Any) -> spb.GetOffsetResponse:
        return spb.GetOffsetResponse(status=status(pb.NOT_IMPLEMENTED, "GetOffset is not served"))

    async def QueryOffset(self, request: Any, context: Any) -> spb.QueryOffsetResponse:
        return spb.QueryOffsetResponse(status=status(pb.NOT_IMPLEMENTED, "QueryOffset is not served"))

    async def RecallMessage(self, request: spb.RecallMessageRequest, context: Any) -> spb.RecallMessageResponse:
        """RECALL_MESSAGE: a timed message cancelled before it is due by the handle its send returned."""
        try:
            md = self._meta(context)
            topic = real(request.topic)
            try:
                broker_name = parse_recall_handle(request.recall_handle)[1]
            except BrokerError:
                raise GrpcStatusError(pb.BAD_REQUEST, "the recall handle is not one this server gave") from None
            addr = await self.backend.master_addr(topic, broker_name)
            if addr is None:
                raise GrpcStatusError(pb.NOT_FOUND, f"broker {broker_name} does not serve topic {topic}")
            fields = {"producerGroup": topic, "topic": topic, "recallHandle": request.recall_handle,
                      "bname": broker_name}
            resp = await self.backend.api(self.auth.credentials(md)).invoke(addr, RequestCode.RECALL_MESSAGE, fields)
            if resp.code == ILLEGAL_OPERATION:
                raise GrpcStatusError(pb.BAD_REQUEST, resp.remark or "the message cannot be recalled")
            if resp.code != ResponseCode.SUCCESS:
                raise _broker_status(resp.code, resp.remark)
            return spb.RecallMessageResponse(status=_OK, message_id=resp.field("msgId") or "")
        except Exception as exc:  # noqa: BLE001
            return spb.RecallMessageResponse(status=_error_status(exc))

    async def SyncLiteSubscription(self, request: Any, context: Any) -> spb.SyncLiteSubscriptionResponse:
        return spb.SyncLiteSubscriptionResponse(status=status(pb.NOT_IMPLEMENTED, "lite topics are not served"))

    # --- commands the server sends -----------------------------------------------------------

    def new_nonce(self) -> str:
        return uuid.uuid4().hex
