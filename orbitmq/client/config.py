"""Frozen configuration of client instances, producers and consumers.

Field names are Python's; defaults are RocketMQ 4.9's (so a Python client
behaves like a Java one of the same group) and each says where it comes from.
`from_kwargs` builds a config from keyword arguments and turns a mistyped
name into a `ConfigError` rather than a silent default.

TLS: `use_tls=True` (Java's useTLS) connects with TLS and verifies brokers and
NameServers against the system's CAs; `tls=` gives RocketMQ's client-side
`tls.*` keys as a mapping (`{"tls.client.trustCertPath": "ca.pem"}`, which
implies TLS on unless `tls.enable` says otherwise) or a `TlsSettings`.

The constructors of the producers and consumers take these fields as
keyword options typed by `ProducerOptions` / `ConsumerOptions` (PEP 692), so
mypy checks each option's name and type at the call site; the option lists
must name exactly the config fields (a test compares them).
"""

from __future__ import annotations

import dataclasses
import enum
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict, TypeVar

from orbitmq.client.allocate import Averagely, QueueAllocator
from orbitmq.common import names
from orbitmq.errors import ConfigError
from orbitmq.remoting.hooks import RPCHook
from orbitmq.remoting.tls import CLIENT_TLS_KEYS, TlsSettings


class MessageModel(str, enum.Enum):
    CLUSTERING = "CLUSTERING"
    BROADCASTING = "BROADCASTING"


class ConsumeFromWhere(str, enum.Enum):
    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


def _half_hour_ago() -> str:
    # Java's default consumeTimestamp: 30 minutes before start, yyyyMMddHHmmss local time.
    return time.strftime("%Y%m%d%H%M%S", time.localtime(time.time() - 1800))


@dataclass(frozen=True)
class ClientConfig:
    #: NameServer addresses, `host:port` separated by `;` (RocketMQ's namesrvAddr).
    namesrv_addr: str = "127.0.0.1:9876"
    #: "DEFAULT" becomes `<pid>#<process start ns>`: one shared instance per process.
    instance_name: str = "DEFAULT"
    #: Address this client announces in its id; None finds the local non-loopback IP.
    client_ip: str | None = None
    unit_name: str | None = None
    poll_name_server_interval_ms: int = 30_000
    heartbeat_broker_interval_ms: int = 30_000
    persist_consumer_offset_interval_ms: int = 5_000
    #: Default RPC timeout (mqClientApiTimeout).
    mq_client_api_timeout_ms: int = 3_000
    #: RocketMQ 4.x plain ACL (AclClientRPCHook): with both keys set, every request is signed.
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
    #: 2: sign with OrbitMQ's version 2 (field names, lengths, body digest, timestamp, nonce);
    #: 1: RocketMQ 4.x's signature, which 4.x brokers understand.
    signature_version: int = 1
    #: Java's useTLS (RocketMQ's tls.enable): every connection speaks TLS.
    use_tls: bool = False
    #: RocketMQ's client-side tls.* settings (trust file, client certificate, test mode).
    tls: TlsSettings | None = None
    #: Runs around every request of the client instance (RocketMQ's RPCHook, given to Java's
    #: client constructors); ACL signing, when configured, runs after it. The client instance
    #: shared under one instance name takes the hook of the client that created it, as in Java.
    rpc_hook: RPCHook | None = field(default=None, compare=False, repr=False)

    def ssl_context(self) -> ssl.SSLContext | None:
        """The context for this client's connections, None without TLS."""
        return client_tls(self.use_tls, self.tls).client_context()


def client_tls(use_tls: bool, tls: TlsSettings | None) -> TlsSettings:
    """`tls` (or defaults) with TLS turned on when `use_tls` asks for it."""
    settings = tls or TlsSettings()
    return dataclasses.replace(settings, enable=True) if use_tls and not settings.enable else settings


def tls_settings(value: TlsSettings | Mapping[str, str] | None) -> TlsSettings | None:
    """The `tls=` option: a TlsSettings as is; a mapping of client-side tls.* keys, TLS on
    unless it says tls.enable=false (ConfigError for other keys)."""
    if value is None or isinstance(value, TlsSettings):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(f"tls must be a TlsSettings or a mapping of tls.* keys, not {type(value).__name__}")
    props = {str(k): str(v) for k, v in value.items()}
    unknown = sorted(k for k in props if k not in CLIENT_TLS_KEYS)
    if unknown:
        raise ConfigError(f"not a client TLS key: {', '.join(unknown)} (known: {', '.join(sorted(CLIENT_TLS_KEYS))})")
    return TlsSettings.from_properties({"tls.enable": "true", **props})


@dataclass(frozen=True)
class ProducerConfig(ClientConfig):
    group: str = "DEFAULT_PRODUCER"
    #: Template topic for auto-created topics (createTopicKey) and its queue count.
    create_topic_key: str = names.AUTO_CREATE_TOPIC_KEY_TOPIC
    default_topic_queue_nums: int = 4
    send_msg_timeout_ms: int = 3_000
    #: Bodies of at least this many bytes are zlib-compressed (§5.4).
    compress_msg_body_over_howmuch: int = 4_096
    compress_level: int = 5
    retry_times_when_send_failed: int = 2
    retry_times_when_send_async_failed: int = 2
    retry_another_broker_when_not_store_ok: bool = False
    max_message_size: int = 4 * 1024 * 1024
    send_latency_fault_enable: bool = False
    #: Natural batching (client/accumulator.py): plain sends pending together for one topic
    #: travel as one SEND_BATCH_MESSAGE, each still with its own result. On by default because it
    #: adds no delay (`linger_ms=0`: only sends started in the same loop turn are joined); RocketMQ
    #: 5's Java producer has the same feature (autoBatch) off by default.
    auto_batch: bool = True
    #: How long a first pending send waits for others to join it (Kafka's linger.ms); 0: no wait.
    linger_ms: int = 0
    #: Upper bound of one coalesced batch, in encoded bytes (capped by max_message_size).
    batch_max_bytes: int = 256 * 1024


@dataclass(frozen=True)
class ConsumerConfig(ClientConfig):
    group: str = "DEFAULT_CONSUMER"
    message_model: MessageModel = MessageModel.CLUSTERING
    consume_from_where: ConsumeFromWhere = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    consume_timestamp: str = field(default_factory=_half_hour_ago)
    allocate_strategy: QueueAllocator = field(default_factory=Averagely)
    #: Worker threads for synchronous listeners: at most consume_thread_max run at once
    #: (consumeThreadMax); consume_thread_min of them start with the consumer and stay
    #: (consumeThreadMin; when only consume_thread_max is given, min(20, consume_thread_max)).
    #: Both within [1, 1000], min <= max, as DefaultMQPushConsumerImpl.checkConfig requires.
    consume_thread_min: int = 20
    consume_thread_max: int = 20
    consume_concurrently_max_span: int = 2_000
    pull_threshold_for_queue: int = 1_000
    pull_threshold_size_for_queue: int = 100  # MiB
    pull_interval_ms: int = 0
    pull_batch_size: int = 32
    consume_message_batch_max_size: int = 1
    post_subscription_when_pull: bool = False
    #: -1: 16 for concurrent consumers, unlimited for orderly ones (Java's rule).
    max_reconsume_times: int = -1
    suspend_current_queue_time_ms: int = 1_000
    #: Orderly retry policy (OrbitMQ): a message whose listener failed this many times in all goes
    #: to `%DLQ%<group>` and its queue moves on. 0: RocketMQ's rule (max_reconsume_times, by default
    #: retry forever while the queue waits).
    orderly_max_attempts: int = 0
    #: Orderly: wait between attempts of a failed batch; 0: suspend_current_queue_time_ms. Each
    #: further attempt doubles it, up to orderly_backoff_max_ms.
    orderly_backoff_ms: int = 0
    orderly_backoff_max_ms: int = 60_000
    consume_timeout_minutes: int = 15
    broker_suspend_max_time_ms: int = 15_000
    consumer_timeout_when_suspend_ms: int = 30_000
    pull_time_delay_ms_when_exception: int = 1_000
    rebalance_interval_ms: int = 20_000
    #: Directory for broadcasting offsets; None means ~/.rocketmq_offsets.
    offsets_dir: str | None = None
    #: Lite pull consumer: commit consumed offsets automatically every interval.
    auto_commit: bool = True
    auto_commit_interval_ms: int = 5_000
    poll_timeout_ms: int = 5_000
    pull_threshold_for_all: int = 10_000


class SecurityOptions(TypedDict, total=False):
    """How a client signs its requests and secures its connections (ACL keys, TLS, RPC hook; see acl.py)."""

    access_key: str | None
    secret_key: str | None
    security_token: str | None
    signature_version: int
    use_tls: bool
    tls: TlsSettings | Mapping[str, str] | None
    rpc_hook: RPCHook | None


class ClientOptions(SecurityOptions, total=False):
    """The keyword options every client takes: the fields of `ClientConfig`."""

    namesrv_addr: str
    instance_name: str
    client_ip: str | None
    unit_name: str | None
    poll_name_server_interval_ms: int
    heartbeat_broker_interval_ms: int
    persist_consumer_offset_interval_ms: int
    mq_client_api_timeout_ms: int


class TraceOptions(TypedDict, total=False):
    """Message trace switches of Producer and PushConsumer (see trace_dispatch.py); not config fields."""

    enable_msg_trace: bool
    trace_topic: str | None


class ProducerOptions(ClientOptions, TraceOptions, total=False):
    """Keyword options of `Producer` and `TransactionProducer`: `ProducerConfig`'s fields but `group`."""

    create_topic_key: str
    default_topic_queue_nums: int
    send_msg_timeout_ms: int
    compress_msg_body_over_howmuch: int
    compress_level: int
    retry_times_when_send_failed: int
    retry_times_when_send_async_failed: int
    retry_another_broker_when_not_store_ok: bool
    max_message_size: int
    send_latency_fault_enable: bool
    auto_batch: bool
    linger_ms: int
    batch_max_bytes: int


class ConsumerOptions(ClientOptions, total=False):
    """Keyword options of the consumers: `ConsumerConfig`'s fields but `group` (enums also as strings)."""

    message_model: MessageModel | str
    consume_from_where: ConsumeFromWhere | str
    consume_timestamp: str
    allocate_strategy: QueueAllocator
    consume_thread_min: int
    consume_thread_max: int
    consume_concurrently_max_span: int
    pull_threshold_for_queue: int
    pull_threshold_size_for_queue: int
    pull_interval_ms: int
    pull_batch_size: int
    consume_message_batch_max_size: int
    post_subscription_when_pull: bool
    max_reconsume_times: int
    suspend_current_queue_time_ms: int
    consume_timeout_minutes: int
    broker_suspend_max_time_ms: int
    consumer_timeout_when_suspend_ms: int
    pull_time_delay_ms_when_exception: int
    rebalance_interval_ms: int
    offsets_dir: str | None
    auto_commit: bool
    auto_commit_interval_ms: int
    poll_timeout_ms: int
    pull_threshold_for_all: int
    orderly_max_attempts: int
    orderly_backoff_ms: int
    orderly_backoff_max_ms: int


class PushConsumerOptions(ConsumerOptions, TraceOptions, total=False):
    """Keyword options of `PushConsumer`: those of every consumer and message trace."""


def pop_trace_options(options: dict[str, Any]) -> tuple[bool, str | None]:
    """Take `enable_msg_trace` and `trace_topic` out of a client's keyword options."""
    return bool(options.pop("enable_msg_trace", False)), options.pop("trace_topic", None)


C = TypeVar("C", bound=ClientConfig)


def from_kwargs(cls: type[C], **kwargs: Any) -> C:
    """Build `cls` from keyword arguments; unknown names raise ConfigError, enums accept strings."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(kwargs) - set(known))
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} option(s): {', '.join(unknown)}")
    converted: dict[str, Any] = {}
    for name, value in kwargs.items():
        if name == "message_model":
            value = _enum(MessageModel, value)
        elif name == "consume_from_where":
            value = _enum(ConsumeFromWhere, value)
        elif name == "tls":
            value = tls_settings(value)
        converted[name] = value
    if "consume_thread_max" in converted and "consume_thread_min" not in converted:
        converted["consume_thread_min"] = min(20, converted["consume_thread_max"])
    if "consume_thread_min" in converted or "consume_thread_max" in converted:
        _check_consume_threads(converted.get("consume_thread_min", 20), converted.get("consume_thread_max", 20))
    for name in ("orderly_max_attempts", "orderly_backoff_ms", "orderly_backoff_max_ms"):
        value = converted.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"{name} must be an integer >= 0, not {value!r}")
    return cls(**converted)


def _check_consume_threads(low: Any, high: Any) -> None:
    """DefaultMQPushConsumerImpl.checkConfig's rules for consumeThreadMin / consumeThreadMax."""
    for name, value in (("consumeThreadMin", low), ("consumeThreadMax", high)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1000:
            raise ConfigError(f"{name} Out of range [1, 1000]: {value!r}")
    if low > high:
        raise ConfigError(f"consumeThreadMin ({low}) is larger than consumeThreadMax ({high})")


E = TypeVar("E", bound=enum.Enum)


def _enum(kind: type[E], value: Any) -> E:
    try:
        return kind(value)
    except ValueError:
        raise ConfigError(f"{value!r} is not one of {[e.value for e in kind]}") from None
