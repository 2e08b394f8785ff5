"""gRPC clients as the proxy knows them: request metadata, ACL signatures, and registration with
the brokers.

Every gRPC client (one client id) gets a remoting connection of its own to each broker it uses and
sends HEART_BEAT over it on every gRPC Heartbeat: producers under the topics they announced in
their Settings (the topic serves as producer group), consumers under their group with a POP
subscription. The brokers therefore list gRPC clients in connection and progress listings, and
a broker's CHECK_TRANSACTION_STATE for a half message arrives on that producer's connection; the
proxy turns it into a RecoverOrphanedTransactionCommand on the client's Telemetry stream.
A client that sends nothing for 120 s, or says it terminates, is forgotten (its connections close,
so the brokers drop it).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from orbitmq.common import properties as mc
from orbitmq.common.filter import build_subscription
from orbitmq.common.record import iter_records
from orbitmq.errors import CorruptRecord, OrbitMQError
from orbitmq.proxy import codec
from orbitmq.proxy.codec import GrpcStatusError, TransactionRef
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import LanguageCode, RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.headers import CheckTransactionStateRequestHeader
from orbitmq.remoting.signing import AclCredentials
from orbitmq.remoting.transport import RemotingClient

if TYPE_CHECKING:
    from orbitmq.broker.acl.plain_config import PlainAcl
    from orbitmq.proxy.backend import Backend
    from orbitmq.proxy.service import MessagingService

log = logging.getLogger(__name__)

#: A client silent for this long is forgotten (as the Apache proxy does).
CLIENT_EXPIRY_SECONDS = 120.0
#: Seconds the proxy waits for a client's answer to a stack-trace or verify command.
ASK_TIMEOUT_SECONDS = 5.0

_LANGUAGES = {"JAVA": LanguageCode.JAVA, "CPP": LanguageCode.CPP, "DOTNET": LanguageCode.DOTNET,
              "DOT_NET": LanguageCode.DOTNET, "PYTHON": LanguageCode.PYTHON, "GOLANG": LanguageCode.GO,
              "GO": LanguageCode.GO, "RUST": LanguageCode.RUST, "PHP": LanguageCode.PHP,
              "NODE_JS": LanguageCode.NODE_JS, "HTTP": LanguageCode.HTTP, "RUBY": LanguageCode.RUBY}


@dataclass(frozen=True, slots=True)
class Metadata:
    """The request headers every RocketMQ 5 client sends (all optional but the client id where needed)."""

    client_id: str
    namespace: str = ""
    language: str = ""
    version: str = ""
    date_time: str = ""
    authorization: str = ""
    peer: str = ""

    @classmethod
    def from_context(cls, context: Any) -> Metadata:
        md: dict[str, str] = {}
        for key, value in context.invocation_metadata() or ():
            if isinstance(value, bytes):
                continue
            md[key.lower()] = value
        peer = context.peer() if hasattr(context, "peer") else ""
        return cls(md.get("x-mq-client-id", ""), md.get("x-mq-namespace", ""), md.get("x-mq-language", ""),
                   md.get("x-mq-client-version", ""), md.get("x-mq-date-time", ""), md.get("authorization", ""),
                   str(peer or ""))


def parse_authorization(text: str) -> tuple[str, str]:
    """(access key, signature) of `MQv2-HMAC-SHA1 Credential=ak, SignedHeaders=..., Signature=sig`."""
    scheme, _, rest = text.strip().partition(" ")
    if scheme != "MQv2-HMAC-SHA1":
        return "", ""
    parts: dict[str, str] = {}
    for item in rest.split(","):
        key, _, value = item.strip().partition("=")
        parts[key.strip()] = value.strip()
    return parts.get("Credential", "").split("/")[0], parts.get("Signature", "")


class ProxyAuth:
    """Checks the request signature against the ACL accounts (none: every request is let through)."""

    def __init__(self, acl: Callable[[], PlainAcl] | None) -> None:
        self.acl = acl

    def check(self, md: Metadata) -> None:
        if self.acl is None:
            return
        access_key, signature = parse_authorization(md.authorization)
        if not access_key:
            raise GrpcStatusError(pb.UNAUTHORIZED, "ACL is on: the request carries no credentials")
        account = self.acl().accounts.get(access_key)
        if account is None:
            raise GrpcStatusError(pb.UNAUTHORIZED, f"no account for access key {access_key}")
        expected = hmac.new(account.secret_key.encode(), md.date_time.encode(), hashlib.sha1).hexdigest()
        if not hmac.compare_digest(expected, signature.lower()):
            raise GrpcStatusError(pb.UNAUTHORIZED, "the request signature does not match the account's secret")

    def credentials(self, md: Metadata) -> AclCredentials | None:
        if self.acl is None:
            return None
        access_key, _ = parse_authorization(md.authorization)
        account = self.acl().accounts.get(access_key)
        return None if account is None else AclCredentials(account.access_key, account.secret_key)


@dataclass
class GrpcClient:
    client_id: str
    md: Metadata
    creds: AclCredentials | None
    client_type: int = pb.CLIENT_TYPE_UNSPECIFIED
    group: str | None = None
    topics: set[str] = field(default_factory=set)
    subscriptions: dict[str, pb.FilterExpression] = field(default_factory=dict)
    #: The consumer was told to consume in order (its group's consumeMessageOrderly, in the Settings reply).
    fifo: bool = False
    streams: list[asyncio.Queue[spb.TelemetryCommand | None]] = field(default_factory=list)
    #: Nonce -> the future a server-initiated command (stack trace, verify) waits on.
    waiters: dict[str, asyncio.Future[str]] = field(default_factory=dict)
    last_seen: float = field(default_factory=time.monotonic)
    started_ms: float = field(default_factory=lambda: time.time() * 1000)
    remoting: RemotingClient | None = None
    registry: ClientRegistry | None = None

    def apply_settings(self, settings: pb.Settings) -> None:
        self.last_seen = time.monotonic()
        self.client_type = settings.client_type
        if settings.WhichOneof("pub_sub") == "publishing":
            self.topics.update(codec.real(t) for t in settings.publishing.topics if t.name)
        elif settings.WhichOneof("pub_sub") == "subscription":
            sub = settings.subscription
            if sub.HasField("group") and sub.group.name:
                self.group = codec.real(sub.group)
            self.subscriptions = {codec.real(e.topic): e.expression for e in sub.subscriptions if e.topic.name}

    @property
    def is_producer(self) -> bool:
        return self.client_type == pb.PRODUCER

    def heartbeat_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"clientID": self.client_id, "producerDataSet": [], "consumerDataSet": []}
        if self.is_producer:
            data["producerDataSet"] = [{"groupName": t} for t in sorted(self.topics)]
        elif self.group:
            subs = []
            for topic, exp in sorted(self.subscriptions.items()):
                sql = exp.type == pb.SQL
                sd = build_subscription(topic, exp.expression or "*", "SQL92" if sql else "TAG")
                subs.append(sd.to_json_dict())
            data["consumerDataSet"] = [{
                "groupName": self.group, "consumeType": "CONSUME_POP", "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET", "subscriptionDataSet": subs, "unitMode": False,
            }]
        return data

    async def heartbeat(self) -> None:
        self.last_seen = time.monotonic()
        registry = self.registry
        if registry is None:
            return
        topics = self.topics if self.is_producer else set(self.subscriptions)
        addrs: set[str] = set()
        for topic in topics:
            try:
                route = await registry.backend.route(topic)
            except OrbitMQError:
                continue
            for bd in route.broker_datas:
                addrs.update(bd.broker_addrs.values() if not self.is_producer else [bd.master_addr or ""])
        addrs.discard("")
        if not addrs:
            return
        if self.remoting is None:
            self.remoting = registry.backend.new_remoting(self.creds)
            self.remoting.register(RequestCode.CHECK_TRANSACTION_STATE, self._on_check)
            self.remoting.register(RequestCode.GET_CONSUMER_RUNNING_INFO, self._on_running_info)
            self.remoting.register(RequestCode.CONSUME_MESSAGE_DIRECTLY, self._on_consume_directly)
        body = orjson.dumps(self.heartbeat_data())
        language = _LANGUAGES.get(self.md.language.upper(), LanguageCode.OTHER)
        for addr in sorted(addrs):
            cmd = RemotingCommand.request(RequestCode.HEART_BEAT, None, body)
            cmd.language = language
            try:
                resp = await self.remoting.invoke(addr, cmd, 3.0)
                if resp.code != ResponseCode.SUCCESS:
                    log.warning("heartbeat of gRPC client %s to %s refused: %s", self.client_id, addr, resp.remark)
            except OrbitMQError as exc:
                log.warning("heartbeat of gRPC client %s to %s failed: %s", self.client_id, addr, exc)

    async def _on_check(self, request: RemotingCommand, peer: Peer) -> RemotingCommand | None:
        """A broker's CHECK_TRANSACTION_STATE: ask the producer through its Telemetry stream."""
        try:
            header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields or {})
            msgs = list(iter_records(request.body_bytes()))
        except (CorruptRecord, ValueError, OrbitMQError) as exc:
            log.warning("unreadable CHECK_TRANSACTION_STATE from %s: %s", peer.addr, exc)
            return None
        if not msgs or not self.streams or self.registry is None:
            return None
        msg = msgs[0]
        topic = msg.properties.get(mc.REAL_TOPIC) or msg.topic
        broker_name = self.registry.backend.broker_names.get(peer.addr, "")
        if not broker_name:
            try:
                route = await self.registry.backend.route(topic)
                broker_name = next((bd.broker_name for bd in route.broker_datas
                                    if peer.addr in bd.broker_addrs.values()), "")
            except OrbitMQError:
                pass
        if not broker_name:
            log.warning("transaction check from %s, a broker no route names", peer.addr)
            return None
        ref = TransactionRef(broker_name, header.commit_log_offset, header.tran_state_table_offset,
                             msg.properties.get(mc.PRODUCER_GROUP) or topic)
        command = spb.TelemetryCommand()
        command.recover_orphaned_transaction_command.message.CopyFrom(
            codec.to_grpc(msg, namespace=self.md.namespace, topic=codec.plain(topic, self.md.namespace)))
        command.recover_orphaned_transaction_command.transaction_id = ref.encode()
        self.streams[0].put_nowait(command)
        return None

    def answered(self, nonce: str, text: str) -> None:
        """A client's answer (ThreadStackTrace, VerifyMessageResult) to a command of ours."""
        waiter = self.waiters.pop(nonce, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(text)

    async def ask(self, command: spb.TelemetryCommand, nonce: str, timeout: float = ASK_TIMEOUT_SECONDS) -> str | None:
        """Write `command` on the client's Telemetry stream and wait for the answer with `nonce` (None: none came)."""
        if not self.streams:
            return None
        waiter: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.waiters[nonce] = waiter
        self.streams[0].put_nowait(command)
        try:
            return await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            return None
        finally:
            self.waiters.pop(nonce, None)

    async def _on_running_info(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """GET_CONSUMER_RUNNING_INFO (`orbitmq admin consumerStatus`): the client's subscription, and its
        threads' stacks asked through PrintThreadStackTraceCommand when jstack is wanted."""
        fields = request.ext_fields or {}
        if fields.get("consumerGroup") != self.group:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    f"The Consumer Group <{fields.get('consumerGroup')}> not exist in this consumer")
        data = self.heartbeat_data()["consumerDataSet"]
        info: dict[str, Any] = {
            "properties": {
                "PROP_CONSUME_TYPE": "CONSUME_POP",
                "PROP_CONSUMEORDERLY": "true" if self.fifo else "false",
                "PROP_CLIENT_VERSION": f"{self.md.language or 'UNKNOWN'} {self.md.version}".strip(),
                "PROP_NAMESERVER_ADDR": "",
                "PROP_CONSUMER_START_TIMESTAMP": str(int(self.started_ms)),
            },
            "subscriptionSet": data[0]["subscriptionDataSet"] if data else [],
            "mqTable": {},
            "statusTable": {},
        }
        if fields.get("jstackEnable") == "true":
            nonce = uuid.uuid4().hex
            command = spb.TelemetryCommand()
            command.print_thread_stack_trace_command.nonce = nonce
            text = await self.ask(command, nonce)
            info["jstack"] = text if text is not None else "(the RocketMQ 5 client sent no stack trace)"
        return request.response(body=orjson.dumps(info))

    async def _on_consume_directly(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        """CONSUME_MESSAGE_DIRECTLY: a VerifyMessageCommand on the Telemetry stream, answered by the client."""
        try:
            msgs = list(iter_records(request.body_bytes()))
        except (CorruptRecord, ValueError) as exc:
            return request.response(ResponseCode.SYSTEM_ERROR, f"unreadable message in the request body: {exc}")
        if not msgs:
            return request.response(ResponseCode.SYSTEM_ERROR, "the request body holds no message")
        started = time.monotonic()
        nonce = uuid.uuid4().hex
        command = spb.TelemetryCommand()
        command.verify_message_command.nonce = nonce
        command.verify_message_command.message.CopyFrom(codec.to_grpc(msgs[0], namespace=self.md.namespace))
        answer = await self.ask(command, nonce)
        if answer is None:
            return request.response(ResponseCode.SYSTEM_ERROR,
                                    f"the RocketMQ 5 client {self.client_id} did not verify the message")
        return request.response(body=orjson.dumps({
            "autoCommit": True, "consumeResult": "CR_SUCCESS", "order": self.fifo, "remark": answer,
            "spentTimeMills": int((time.monotonic() - started) * 1000),
        }))

    async def close(self) -> None:
        for stream in list(self.streams):
            stream.put_nowait(None)
        if self.remoting is not None:
            await self.remoting.close()
            self.remoting = None


class ClientRegistry:
    def __init__(self, backend: Backend, service: MessagingService) -> None:
        self.backend = backend
        self.service = service
        self.clients: dict[str, GrpcClient] = {}

    def get(self, client_id: str) -> GrpcClient | None:
        return self.clients.get(client_id)

    def get_or_create(self, md: Metadata) -> GrpcClient:
        if not md.client_id:
            raise GrpcStatusError(pb.CLIENT_ID_REQUIRED, "the x-mq-client-id header is missing")
        client = self.clients.get(md.client_id)
        if client is None:
            client = GrpcClient(md.client_id, md, self.service.auth.credentials(md), registry=self)
            self.clients[md.client_id] = client
        client.last_seen = time.monotonic()
        return client

    async def terminate(self, client_id: str) -> None:
        client = self.clients.pop(client_id, None)
        if client is not None:
            await client.close()

    async def expire(self, now: float | None = None) -> list[str]:
        now = time.monotonic() if now is None else now
        gone = [cid for cid, c in self.clients.items()
                if now - c.last_seen > CLIENT_EXPIRY_SECONDS and not c.streams]
        for cid in gone:
            await self.terminate(cid)
        return gone

    async def close(self) -> None:
        for cid in list(self.clients):
            await self.terminate(cid)
