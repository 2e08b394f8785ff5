"""BrokerConfig: the broker's settings, read from a RocketMQ-style broker.conf.

Fields use Python names; `from_properties` also accepts RocketMQ's property
names (brokerName, listenPort, namesrvAddr, ...) so an existing broker.conf
works unchanged. Keys that belong to the message store (storePathRootDir,
flushDiskType, mappedFileSizeCommitLog, maxMessageSize, fileReservedTime, ...)
are handed to `StoreConfig.from_properties`. The other keys of RocketMQ 4.9's
broker classes (thread pools, Netty tuning, DLedger, ...; common/keycatalog.py)
are accepted and kept in `rocketmq_only`, each with the reason it has no
effect here (`ignored_keys`). A key known to neither raises `ConfigError`
naming it and the nearest known key (RocketMQ drops such keys silently; we
do not). RocketMQ's `tls.*` keys (JVM system properties there) may be written
in broker.conf too; they become `tls`, a `TlsSettings` (remoting/tls.py).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orbitmq.broker.schedule import parse_delay_levels
from orbitmq.common.javaprops import java_double, java_int, java_long
from orbitmq.common.keycatalog import BROKER_KEYS, KeySpec, parse_java_boolean, suggest
from orbitmq.errors import ConfigError
from orbitmq.remoting.tls import TlsSettings, split_tls_properties
from orbitmq.store import config as store_keys
from orbitmq.store.config import BrokerRole, StoreConfig

#: metricsExporterType values OrbitMQ serves (RocketMQ 5 also has OTLP_GRPC and LOG).
METRICS_EXPORTER_TYPES = ("DISABLE", "PROM")

#: RocketMQ's delay level table (messageDelayLevel), levels 1..18.
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"


def _default_ip() -> str:
    """The address advertised when brokerIP1 is not set: the host's own address.

    RocketMQ picks a non-loopback interface address. Resolving our host name
    needs no network and usually gives that address; fall back to loopback.
    """
    try:
        ip = socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"
    return ip or "127.0.0.1"


@dataclass(frozen=True)
class BrokerConfig:
    """Settings of one broker. Defaults are RocketMQ 4.9.7's unless a comment says why not."""

    broker_cluster_name: str = "DefaultCluster"
    #: RocketMQ defaults to the host name; a fixed name keeps `orbitmq dev` predictable.
    broker_name: str = "broker-a"
    broker_id: int = 0
    #: NameServer addresses (`host:port`), from the `;`-separated namesrvAddr.
    namesrv_addrs: tuple[str, ...] = ()
    listen_port: int = 10911
    #: Interface the broker binds (not a RocketMQ key; `--listen` sets it).
    listen_host: str = "0.0.0.0"
    #: Connections the kernel queues before the broker accepts them (client and VIP ports).
    server_socket_backlog: int = 1024
    #: Address advertised to NameServers and written into message ids.
    #: Empty means: the listen host when it is concrete, else the host's address.
    broker_ip1: str = ""
    broker_ip2: str = ""
    #: PermName bits of the whole broker (6 = read and write).
    broker_permission: int = 6
    auto_create_topic_enable: bool = True
    #: Limits on topics clients create by sending (not RocketMQ keys; broker/autocreate.py):
    #: none once the broker holds this many topics, and at most this many per minute.
    auto_create_topic_max_count: int = 4_096
    auto_create_topic_per_minute: int = 600
    auto_create_subscription_group: bool = True
    #: Queue count of the TBW102 template topic (read and write).
    default_topic_queue_nums: int = 8
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = "RMQ_SYS_TRACE_TOPIC"
    trace_on: bool = True
    region_id: str = "DefaultRegion"
    #: RocketMQ 4.x plain ACL: every request is checked against aclConfigPath (broker/acl/).
    acl_enable: bool = False
    #: plain_acl.yml (RocketMQ reads ROCKETMQ_HOME/conf/plain_acl.yml). Empty means
    #: <storePathRootDir>/conf/plain_acl.yml; a relative path is taken from the working directory.
    acl_config_path: str = ""
    #: RocketMQ's home folder: when set and aclConfigPath is not, plain_acl.yml is read from its
    #: conf/ folder, as RocketMQ reads ${rocketmq.home.dir}/conf/plain_acl.yml.
    rocketmq_home: str = ""
    #: The broker's own ACL account (not RocketMQ keys): it signs what the broker sends to
    #: NameServers (REGISTER_BROKER needs an admin account when the NameServer has ACL on)
    #: and, on a slave, to its master. Both or neither.
    broker_access_key: str = ""
    broker_secret_key: str = field(default="", repr=False)
    #: HA port authentication (not RocketMQ keys): a slave proves with an HMAC of a challenge that
    #: it holds the group's secret before the master sends CommitLog bytes. The secret is haSecret,
    #: else brokerSecretKey when aclEnable=true; it is on whenever there is one, or when
    #: haAuthEnable=true (which then requires one). Master and slave need the same secret.
    ha_auth_enable: bool = False
    ha_secret: str = field(default="", repr=False)
    #: VIP ("fast") channel: RocketMQ also serves every code but PULL_MESSAGE on listenPort - 2.
    #: -1 means listenPort - 2 (off when listenPort is 0); 0 an ephemeral port; else that port.
    fast_listen_port: int = -1
    #: Set false to run without the VIP channel.
    fast_channel_enable: bool = True
    #: A send decoded longer ago than this is answered SYSTEM_BUSY (RocketMQ's fast failure).
    wait_time_mills_in_send_queue: int = 200
    #: false turns that fast failure off: a send waits at the gate as long as it takes.
    broker_fast_failure_enable: bool = True
    #: false: members of a consumer group are not told when members join or leave (they find
    #: out at their next rebalance, every 20 s); a group's own setting can also turn it off.
    notify_consumer_ids_changed_enable: bool = True
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    #: Upper bound on a client's suspendTimeoutMillis, so a bad request cannot pin a pull forever.
    max_suspend_time_mills: int = 60_000
    #: Pulls suspended at once, broker-wide and per connection (not RocketMQ keys: it has no
    #: bound). One parked pull costs a few KB; one consumer parks one pull per queue it owns on
    #: this broker. More are answered SYSTEM_BUSY and the consumer pulls again after a pause.
    max_suspended_pulls: int = 16_384
    max_suspended_pulls_per_connection: int = 2_048
    register_name_server_period: int = 30_000
    register_broker_timeout_mills: int = 6_000
    flush_consumer_offset_interval: int = 5_000
    #: A client channel without heartbeat for this long is dropped (scan every 10 s).
    channel_expired_timeout_mills: int = 120_000
    channel_scan_interval_mills: int = 10_000
    #: Orderly-consumer queue locks expire after this long without renewal.
    rebalance_lock_max_live_time: int = 60_000
    default_query_max_num: int = 32
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    #: How often delayOffset.json is written when delay-level progress moved.
    flush_delay_offset_interval: int = 10_000
    #: Furthest a timed message (TIMER_DELIVER_MS/TIMER_DELAY_SEC/TIMER_DELAY_MS) may ask; 7 days.
    timer_max_delay_sec: int = 7 * 86_400
    #: How often timerCheckpoint.json is written when timer progress moved (bounds redeliveries).
    timer_flush_interval_ms: int = 100
    #: SQL92 subscriptions are refused unless this is on (RocketMQ's default is off too).
    enable_property_filter: bool = False
    reject_transaction_message: bool = False
    #: A half message is first checked this long after it was born (ms); a message's own
    #: CHECK_IMMUNITY_TIME_IN_SECONDS overrides it.
    transaction_time_out: int = 6_000
    #: How often the transaction check service looks for unresolved half messages (ms).
    transaction_check_interval: int = 60_000
    #: Checks of one half message before it is moved to TRANS_CHECK_MAX_TIME_TOPIC.
    transaction_check_max: int = 15
    store_reply_message_enable: bool = True
    #: A slave serves pulls only when this is on; on a master it lets pulls be told to go
    #: to the slave when the consumer lags far behind (suggestWhichBrokerId).
    slave_read_enable: bool = False
    #: Idempotent sends (not RocketMQ keys; broker/dedup.py): within this many seconds a second send
    #: with the same UNIQ_KEY to the same topic answers the first send's result instead of storing
    #: again. 0 (off) keeps RocketMQ's behaviour; a topic's attribute of the same name overrides it;
    #: `orbitmq dev` turns it on.
    duplicate_detection_window_seconds: int = 0
    #: Most ids the duplicate window remembers; past it the oldest are forgotten early.
    duplicate_detection_max_entries: int = 1_000_000
    #: Seconds a clean shutdown waits for in-flight requests.
    shutdown_drain_seconds: float = 5.0
    #: Bytes the client and VIP listeners' connections may hold together in unfinished frames
    #: and output their peers do not read (not a RocketMQ key; remoting/budget.py). Beyond it,
    #: connections with large frames wait (stop reading) for earlier ones to finish.
    remoting_memory_budget: int = 256 << 20
    #: RocketMQ 5's metrics export: DISABLE, or PROM for a Prometheus endpoint (`/metrics`) on
    #: metricsPromExporterHost:metricsPromExporterPort, an HTTP port apart from the remoting
    #: ones and without ACL (docs/metrics.md). Empty host: the listen host; port 0: any free port.
    metrics_exporter_type: str = "DISABLE"
    metrics_prom_exporter_host: str = ""
    metrics_prom_exporter_port: int = 5557
    #: RocketMQ 5's local-mode proxy: serve RocketMQ 5 gRPC clients (apache.rocketmq.v2) in-process
    #: on listenHost:grpcServerPort (orbitmq/proxy/); routes come from namesrvAddr, which it needs.
    enable_grpc_proxy: bool = False
    grpc_server_port: int = 8081
    #: Automatic failover (orbitmq/failover, docs/failover.md). Off: brokerRole and brokerId
    #: decide the role as in RocketMQ 4.x. On: the replicas of a broker group coordinate through
    #: etcd (etcdEndpoints, `host:port;...`): the id comes from etcd (brokerId is ignored), one
    #: replica holds the master lease (controllerLeaseSeconds) and runs as brokerRole (SYNC_MASTER
    #: when brokerRole=SLAVE) under id 0, the others follow it as slaves.
    enable_controller_mode: bool = False
    etcd_endpoints: str = ""
    controller_lease_seconds: int = 6
    #: Root of the group keys in etcd: <prefix>/<cluster>/<brokerName>/.
    controller_key_prefix: str = "/orbitmq/v1"
    #: How often a replica reports its offsets to etcd and re-reads the group (ms).
    controller_report_interval_ms: int = 500
    #: A replica not caught up with the master for this long leaves the in-sync set (ms).
    ha_max_time_slave_not_catchup: int = 15_000
    #: Lower wins an election between replicas with the same epoch and offset.
    broker_election_priority: int = 2**31 - 1
    #: Elect a replica outside the in-sync set when no member lives (may lose acknowledged data).
    enable_elect_unclean_master: bool = False
    store: StoreConfig = field(default_factory=StoreConfig)
    #: tls.server.mode for the client, VIP and HA ports; tls.enable for the broker's own
    #: connections (NameServers, its master's remoting and HA ports).
    tls: TlsSettings = field(default_factory=TlsSettings)
    #: RocketMQ keys given that have no effect here (keycatalog.py says why), with their values.
    rocketmq_only: tuple[tuple[str, str], ...] = ()
    #: The broker.conf read at start (`-c`); UPDATE_BROKER_CONFIG rewrites it. Not a key.
    config_file: str = ""

    # --- derived values ----------------------------------------------------

    @functools.cached_property
    def advertised_ip(self) -> str:
        if self.broker_ip1:
            return self.broker_ip1
        if self.listen_host not in ("", "0.0.0.0", "::"):
            return self.listen_host
        return _default_ip()

    @functools.cached_property
    def broker_addr(self) -> str:
        """`ip:port` clients use to reach this broker."""
        return f"{self.advertised_ip}:{self.listen_port}"

    @property
    def ha_auth_secret(self) -> str:
        """The HA port's shared secret; empty means plain RocketMQ HA (no authentication)."""
        if self.ha_secret:
            return self.ha_secret
        if self.acl_enable and self.broker_secret_key:
            return self.broker_secret_key
        return ""

    @property
    def acl_file(self) -> str:
        """Where plain_acl.yml is read and written (see acl_config_path)."""
        if self.acl_config_path:
            return os.path.abspath(os.path.expanduser(self.acl_config_path))
        if self.rocketmq_home:
            return os.path.join(os.path.abspath(os.path.expanduser(self.rocketmq_home)), "conf", "plain_acl.yml")
        return os.path.join(self.store.root_dir, "conf", "plain_acl.yml")

    @property
    def fast_port(self) -> int | None:
        """The port of the VIP channel to bind (0: any), or None for no VIP channel."""
        if not self.fast_channel_enable:
            return None
        if self.fast_listen_port >= 0:
            return self.fast_listen_port
        return self.listen_port - 2 if self.listen_port > 2 else None

    @property
    def ha_server_addr(self) -> str:
        """brokerIP2:haPort as configured (the broker advertises the port it actually bound)."""
        port = self.store.ha_listen_port
        if port < 0:
            port = self.listen_port + 1 if self.listen_port else 0
        return f"{self.broker_ip2 or self.advertised_ip}:{port}"

    @property
    def etcd_endpoint_list(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.etcd_endpoints.split(";") if part.strip())

    # --- reading -----------------------------------------------------------

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Build a config from broker.conf keys (RocketMQ or Python names).

        Raises ConfigError naming the first key that is unknown or malformed.
        """
        tls_props, props = split_tls_properties(props)
        broker_values, store_props, inert = split_properties(props)
        try:
            store = StoreConfig.from_properties(store_props)
            tls = TlsSettings.from_properties(tls_props)
        except ConfigError as exc:
            raise ConfigError(f"broker.conf: {exc}") from exc
        config = cls(store=store, tls=tls, rocketmq_only=tuple(inert.items()), **broker_values)
        config.validate()
        return config

    def with_properties(self, props: Mapping[str, str]) -> BrokerConfig:
        """A copy with keys replaced (UPDATE_BROKER_CONFIG).

        Store keys the running store reads on every use (fileReservedTime, deleteWhen,
        diskMaxUsedSpaceRatio, maxTransfer*, ...; store.config.RUNTIME_FIELDS) change; the others
        are refused naming the key, as are keys that shape listeners or the ACL check. Keys with
        no effect here are recorded, as RocketMQ records them.
        """
        tls_props, props = split_tls_properties(props)
        if tls_props:
            # Turning TLS off over the wire would undo it for every later connection.
            raise ConfigError(f"{next(iter(tls_props))} needs a broker restart to change")
        broker_values, store_props, inert = split_properties(props)
        store = self.store
        if store_props:
            store = StoreConfig.from_properties({**self.store.to_properties(), **store_props})
            for key in store.changed_keys(self.store):
                if store_keys.field_of(key) not in store_keys.RUNTIME_FIELDS:
                    raise ConfigError(
                        f"{key} is read when the store opens and cannot change while the broker runs; "
                        "set it in the config file and restart the broker"
                    )
        for name in _RESTART_ONLY:
            if name in broker_values and broker_values[name] != getattr(self, name):
                # Turning ACL off over the wire would let a request lift its own check.
                raise ConfigError(f"{_FIELD_TO_KEY[name]} needs a broker restart to change")
        for name in _READ_AT_START:
            if name in broker_values and broker_values[name] != getattr(self, name):
                raise ConfigError(
                    f"{_FIELD_TO_KEY[name]} is read when the broker starts and cannot change while it runs; "
                    "set it in the config file and restart the broker"
                )
        rocketmq_only = {**dict(self.rocketmq_only), **inert}
        updated = dataclasses.replace(self, store=store, rocketmq_only=tuple(rocketmq_only.items()), **broker_values)
        updated.validate()
        return updated

    @property
    def ignored_keys(self) -> list[tuple[str, str]]:
        """(key, why it has no effect) for each RocketMQ key given that OrbitMQ does not apply."""
        return [(key, BROKER_KEYS[key].ignored) for key, _ in self.rocketmq_only]

    def log_ignored_keys(self, logger: logging.Logger) -> None:
        """One WARN line per RocketMQ key given that has no effect here, naming the key and why."""
        for key, value in self.rocketmq_only:
            logger.warning("config key %s=%s has no effect in OrbitMQ: %s", key, value, BROKER_KEYS[key].ignored)

    def file_properties(self) -> dict[str, str]:
        """What UPDATE_BROKER_CONFIG writes back to the config file, as RocketMQ rewrites it whole:
        every key OrbitMQ applies, and the keys without effect here that were given (those never
        set stay out, so the next start warns about the same keys as this one)."""
        props = self.to_properties(reveal_secrets=True)
        given = dict(self.rocketmq_only)
        for key, spec in BROKER_KEYS.items():
            if spec.ignored and key not in given:
                props.pop(key, None)
        if not self.broker_ip1:
            del props["brokerIP1"]  # keep finding the host's address rather than pinning today's
        return props

    @property
    def delay_levels_ms(self) -> tuple[int, ...]:
        """messageDelayLevel parsed: delay in ms of level 1, 2, ..."""
        return parse_delay_levels(self.message_delay_level)

    def validate(self) -> None:
        parse_delay_levels(self.message_delay_level)
        if self.timer_max_delay_sec <= 0:
            raise ConfigError("timerMaxDelaySec must be positive")
        if not -1 <= self.fast_listen_port <= 65535:
            raise ConfigError(f"fastListenPort {self.fast_listen_port} is not a TCP port (or -1)")
        if self.metrics_exporter_type not in METRICS_EXPORTER_TYPES:
            raise ConfigError(
                f"metricsExporterType {self.metrics_exporter_type!r} is not one of {', '.join(METRICS_EXPORTER_TYPES)}"
            )
        if not 0 <= self.metrics_prom_exporter_port <= 65535:
            raise ConfigError(f"metricsPromExporterPort {self.metrics_prom_exporter_port} is not a TCP port")
        if not 0 <= self.grpc_server_port <= 65535:
            raise ConfigError(f"grpcServerPort {self.grpc_server_port} is not a TCP port")
        if self.enable_grpc_proxy and not self.namesrv_addrs:
            raise ConfigError("enableGrpcProxy=true needs namesrvAddr (the proxy finds brokers through it)")
        if not 0 <= self.listen_port <= 65535:
            raise ConfigError(f"listenPort {self.listen_port} is not a TCP port")
        if self.broker_id < 0:
            raise ConfigError(f"brokerId {self.broker_id} must not be negative")
        if self.store.broker_role is BrokerRole.SLAVE and self.broker_id == 0:
            # Id 0 is the master's in every route; a slave registered under it would replace it.
            raise ConfigError("brokerRole=SLAVE needs a brokerId greater than 0")
        if not self.broker_name or not self.broker_cluster_name:
            raise ConfigError("brokerName and brokerClusterName must not be empty")
        if not 0 <= self.duplicate_detection_window_seconds <= 604_800:
            raise ConfigError("duplicateDetectionWindowSeconds must be in 0..604800 (7 days)")
        if self.duplicate_detection_max_entries <= 0:
            raise ConfigError("duplicateDetectionMaxEntries must be positive")
        if self.default_topic_queue_nums <= 0:
            raise ConfigError("defaultTopicQueueNums must be positive")
        if bool(self.broker_access_key) != bool(self.broker_secret_key):
            raise ConfigError("brokerAccessKey and brokerSecretKey go together: give both or neither")
        if self.ha_auth_enable and not self.ha_auth_secret:
            raise ConfigError("haAuthEnable=true needs haSecret (or aclEnable=true with brokerSecretKey)")
        if self.server_socket_backlog <= 0:
            raise ConfigError("serverSocketBacklog must be positive")
        if self.remoting_memory_budget <= 0:
            raise ConfigError("remotingMemoryBudget must be positive")
        for name in ("max_suspended_pulls", "max_suspended_pulls_per_connection",
                     "auto_create_topic_max_count", "auto_create_topic_per_minute"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{_FIELD_TO_KEY[name]} must not be negative")
        if self.enable_controller_mode and not self.etcd_endpoint_list:
            raise ConfigError("enableControllerMode=true needs etcdEndpoints (host:port;...)")
        for addr in self.etcd_endpoint_list:
            host, sep, port = addr.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
                raise ConfigError(f"etcdEndpoints entry {addr!r} is not host:port")
        if not 3 <= self.controller_lease_seconds <= 3600:
            raise ConfigError("controllerLeaseSeconds must be in 3..3600")
        if not 50 <= self.controller_report_interval_ms <= 60_000:
            raise ConfigError("controllerReportIntervalMs must be in 50..60000")
        if self.ha_max_time_slave_not_catchup <= 0:
            raise ConfigError("haMaxTimeSlaveNotCatchup must be positive")
        if not self.controller_key_prefix.startswith("/"):
            raise ConfigError("controllerKeyPrefix must start with /")
        for addr in self.namesrv_addrs:
            host, sep, port = addr.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ConfigError(f"namesrvAddr entry {addr!r} is not host:port")

    def to_properties(self, *, reveal_secrets: bool = False) -> dict[str, str]:
        """Every key, as GET_BROKER_CONFIG shows them: broker settings under RocketMQ names, the
        store's, TLS's, and every other key of RocketMQ's broker classes (the value given, else
        RocketMQ's default). Secrets are masked unless `reveal_secrets` (the config file)."""
        out: dict[str, str] = {}
        for f in dataclasses.fields(self):
            if f.name in _NOT_KEYS:
                continue
            value = getattr(self, f.name)
            if f.name == "namesrv_addrs":
                text = ";".join(value)
            elif isinstance(value, bool):
                text = "true" if value else "false"
            else:
                text = str(value)
            if f.name in _SECRETS and text and not reveal_secrets:
                text = "******"  # never handed out over the wire
            out[_FIELD_TO_KEY[f.name]] = text
        out["brokerIP1"] = self.advertised_ip
        out.update(self.tls.to_properties(reveal_passwords=reveal_secrets))
        store_props = getattr(self.store, "to_properties", None)
        if callable(store_props):
            out.update({str(k): str(v) for k, v in store_props().items()})
        given = dict(self.rocketmq_only)
        for key, spec in BROKER_KEYS.items():
            if key not in out:
                out[key] = given.get(key, spec.default)
        return out


# --- key tables --------------------------------------------------------------

#: Keys UPDATE_BROKER_CONFIG may not change: they shape listeners and the ACL check.
_RESTART_ONLY = (
    "acl_enable", "acl_config_path", "fast_listen_port", "fast_channel_enable", "listen_port",
    "broker_access_key", "broker_secret_key", "ha_auth_enable", "ha_secret", "remoting_memory_budget",
    "metrics_exporter_type", "metrics_prom_exporter_host", "metrics_prom_exporter_port",
    "enable_grpc_proxy", "grpc_server_port",
    "enable_controller_mode", "etcd_endpoints", "controller_lease_seconds", "controller_key_prefix",
)
#: Keys the broker reads once, at start (its identity, listeners, periodic tasks, system topics):
#: UPDATE_BROKER_CONFIG refuses to change them rather than accept a value that does nothing.
_READ_AT_START = (
    "broker_cluster_name", "broker_name", "broker_id", "listen_host", "broker_ip2",
    "channel_expired_timeout_mills", "channel_scan_interval_mills", "rebalance_lock_max_live_time",
    "flush_consumer_offset_interval", "message_delay_level", "flush_delay_offset_interval",
    "timer_max_delay_sec", "timer_flush_interval_ms", "cluster_topic_enable", "broker_topic_enable",
    "trace_topic_enable", "msg_trace_topic_name", "duplicate_detection_max_entries",
    "server_socket_backlog", "rocketmq_home",
    "controller_report_interval_ms", "ha_max_time_slave_not_catchup", "broker_election_priority",
    "enable_elect_unclean_master",
)
#: Shown masked by GET_BROKER_CONFIG.
_SECRETS = frozenset({"broker_secret_key", "ha_secret"})
#: Fields that are not one key each.
_NOT_KEYS = frozenset({"store", "tls", "rocketmq_only", "config_file"})

#: RocketMQ property names whose Python name is not a plain camelCase conversion.
_SPECIAL_KEYS: dict[str, str] = {
    "namesrvAddr": "namesrv_addrs",
    "brokerIP1": "broker_ip1",
    "brokerIP2": "broker_ip2",
    "bindAddress": "listen_host",
    "listenHost": "listen_host",
    "channelExpiredTimeoutMills": "channel_expired_timeout_mills",
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


_FIELDS: dict[str, dataclasses.Field[Any]] = {
    f.name: f for f in dataclasses.fields(BrokerConfig) if f.name not in _NOT_KEYS
}
_KEY_TO_FIELD: dict[str, str] = {_camel(name): name for name in _FIELDS}
_KEY_TO_FIELD.update(_SPECIAL_KEYS)
_KEY_TO_FIELD.update({name: name for name in _FIELDS})
_FIELD_TO_KEY: dict[str, str] = {name: _camel(name) for name in _FIELDS}
_FIELD_TO_KEY.update({"namesrv_addrs": "namesrvAddr", "broker_ip1": "brokerIP1", "broker_ip2": "brokerIP2"})


def _convert(key: str, name: str, raw: str) -> Any:
    kind = _FIELDS[name].type
    text = raw.strip()
    try:
        if name == "namesrv_addrs":
            return tuple(a.strip() for a in text.split(";") if a.strip())
        if kind == "bool":
            return parse_java_boolean(text)
        if kind == "int":
            spec = BROKER_KEYS.get(_FIELD_TO_KEY[name])
            return java_int(text) if spec is not None and spec.java_type == "int" else java_long(text)
        if kind == "float":
            return java_double(text)
        return text
    except ValueError as exc:
        raise ConfigError(f"{key}={raw!r}: {exc}") from exc


def _check_inert(key: str, spec: KeySpec, raw: str) -> str:
    """The value of a key OrbitMQ does not apply, checked as RocketMQ would parse it."""
    text = raw.strip()
    try:
        if spec.java_type == "boolean":
            return "true" if parse_java_boolean(text) else "false"
        if spec.java_type == "int":
            return str(java_int(text))
        if spec.java_type == "long":
            return str(java_long(text))
        if spec.java_type in ("double", "float"):
            java_double(text)
    except ValueError as exc:
        raise ConfigError(f"{key}={raw!r}: {exc}") from exc
    return text


#: RocketMQ 4.x spells some store keys with one "p"; broker.conf files carry either spelling.
_STORE_KEY_ALIASES: dict[str, str] = {
    "mapedFileSizeCommitLog": "mappedFileSizeCommitLog",
    "mapedFileSizeConsumeQueue": "mappedFileSizeConsumeQueue",
}


def known_keys() -> list[str]:
    """Every key broker.conf may hold (for suggestions): OrbitMQ's and RocketMQ's."""
    keys = set(_FIELD_TO_KEY.values()) | set(BROKER_KEYS) | set(_STORE_KEY_ALIASES)
    keys.update(store_keys.key_of(f.name) for f in dataclasses.fields(StoreConfig))
    return sorted(keys)


def split_properties(
    props: Mapping[str, str],
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """Split properties into converted broker fields, store keys, and RocketMQ keys without effect here.

    Raises ConfigError for a key no side knows, naming the nearest known key.
    """
    broker: dict[str, Any] = {}
    store: dict[str, str] = {}
    inert: dict[str, str] = {}
    for key, raw in props.items():
        name = _KEY_TO_FIELD.get(key)
        if name is not None:
            broker[name] = _convert(key, name, str(raw))
            continue
        store_key = _STORE_KEY_ALIASES.get(key, key)
        if store_keys.field_of(store_key) is not None:
            store[store_key] = raw
            continue
        spec = BROKER_KEYS.get(key)
        if spec is not None:
            inert[key] = _check_inert(key, spec, str(raw))
            continue
        raise ConfigError(f"unknown key {key!r}{suggest(key, known_keys())}")
    return broker, store, inert


class LiveConfig:
    """The broker's current config. UPDATE_BROKER_CONFIG swaps `value` for a new frozen copy;
    handlers read `live.value` per request, so they see the change at once."""

    def __init__(self, value: BrokerConfig) -> None:
        self.value = value
