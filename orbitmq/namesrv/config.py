"""NameServer configuration: a frozen dataclass read from RocketMQ's namesrv.properties keys.

Keys come in RocketMQ's spelling (`listenPort`, `kvConfigPath`,
`orderMessageEnable`, ...) so an existing namesrv.properties works. The other
keys of RocketMQ 4.9's NamesrvConfig and NettyServerConfig (Netty tuning, ...;
common/keycatalog.py) are accepted, kept in `rocketmq_only` and reported in
`ignored_keys` so the command line can warn about them. A key known to neither
raises ConfigError naming it and the nearest known key. RocketMQ's `tls.*`
keys (JVM system properties there) are accepted too and become `tls`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace

from orbitmq.common.javaprops import format_properties as format_java_properties
from orbitmq.common.javaprops import java_double, java_int, java_long
from orbitmq.common.keycatalog import NAMESRV_KEYS, parse_java_boolean, suggest
from orbitmq.errors import ConfigError
from orbitmq.remoting.tls import TlsSettings, split_tls_properties


def _default_kv_config_path() -> str:
    # RocketMQ keeps the KV table at ${user.home}/namesrv/kvConfig.json.
    return os.path.join(os.path.expanduser("~"), "namesrv", "kvConfig.json")


@dataclass(frozen=True)
class NamesrvConfig:
    """Settings of one NameServer; durations are milliseconds as in RocketMQ's files."""

    #: Our own key `listenHost`: RocketMQ binds every interface, so we do by default.
    listen_host: str = "0.0.0.0"
    #: RocketMQ's name server port, so existing clients find us.
    listen_port: int = 9876
    #: Connections the kernel queues before the server accepts them (RocketMQ's serverSocketBacklog).
    server_socket_backlog: int = 1024
    kv_config_path: str = ""
    #: Where UPDATE_NAMESRV_CONFIG writes the whole configuration back. Empty: the -c file
    #: (`config_file`); RocketMQ's default is ${user.home}/namesrv/namesrv.properties.
    config_store_path: str = ""
    #: When true, GET_ROUTEINFO_BY_TOPIC adds orderTopicConf from the ORDER_TOPIC_CONFIG namespace.
    order_message_enable: bool = False
    #: How often silent brokers are looked for (10 s in RocketMQ 4.x).
    scan_not_active_broker_interval_ms: int = 10_000
    #: How long a broker may stay silent (RocketMQ's BROKER_CHANNEL_EXPIRED_TIME, 2 minutes).
    broker_channel_expired_time_ms: int = 120_000
    #: RocketMQ's frameMaxLength default: 16 MiB.
    max_frame_length: int = 16 << 20
    #: Bytes all connections may hold in unfinished frames and unread output (remoting/budget.py).
    remoting_memory_budget: int = 256 << 20
    #: Not RocketMQ keys (4.x NameServers check nothing): with ACL on, the writes (REGISTER_BROKER,
    #: UNREGISTER_BROKER, PUT/DELETE_KV_CONFIG, UPDATE_NAMESRV_CONFIG, WIPE/ADD_WRITE_PERM_OF_BROKER,
    #: DELETE_TOPIC_IN_NAMESRV) need a signed request of an admin account of aclConfigPath, a
    #: plain_acl.yml as the broker reads it; reads stay open. Empty path: plain_acl.yml next to kvConfigPath.
    acl_enable: bool = False
    acl_config_path: str = ""
    #: Prometheus endpoint (`/metrics`), as the broker's keys: DISABLE or PROM; empty host means
    #: the listen host; port 0 any free port (docs/metrics.md).
    metrics_exporter_type: str = "DISABLE"
    metrics_prom_exporter_host: str = ""
    metrics_prom_exporter_port: int = 5557
    #: RocketMQ keys that were given but have no effect here, with their values.
    rocketmq_only: tuple[tuple[str, str], ...] = ()
    #: The properties file read at start (`-c`). Not a key.
    config_file: str = ""
    #: tls.server.mode and the rest of RocketMQ's tls.* settings for the listening port.
    tls: TlsSettings = field(default_factory=TlsSettings)

    def __post_init__(self) -> None:
        if not self.kv_config_path:
            object.__setattr__(self, "kv_config_path", _default_kv_config_path())
        if not 0 <= self.listen_port <= 65535:
            raise ConfigError(f"listenPort must be 0..65535, got {self.listen_port}")
        if self.metrics_exporter_type not in ("DISABLE", "PROM"):
            raise ConfigError(f"metricsExporterType must be DISABLE or PROM, got {self.metrics_exporter_type!r}")
        if not 0 <= self.metrics_prom_exporter_port <= 65535:
            raise ConfigError(f"metricsPromExporterPort must be 0..65535, got {self.metrics_prom_exporter_port}")
        for name in ("server_socket_backlog", "scan_not_active_broker_interval_ms", "broker_channel_expired_time_ms", "max_frame_length",
                     "remoting_memory_budget"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{_KEY_OF_FIELD[name]} must be positive, got {getattr(self, name)}")

    @property
    def ignored_keys(self) -> tuple[str, ...]:
        """RocketMQ keys given that have no effect here (keycatalog.py says why)."""
        return tuple(key for key, _ in self.rocketmq_only)

    @property
    def persist_path(self) -> str:
        """The file UPDATE_NAMESRV_CONFIG rewrites: configStorePath, else the -c file, else none."""
        path = self.config_store_path or self.config_file
        return os.path.abspath(os.path.expanduser(path)) if path else ""

    @property
    def acl_file(self) -> str:
        """Where plain_acl.yml is read: aclConfigPath, else next to the KV config."""
        if self.acl_config_path:
            return os.path.abspath(os.path.expanduser(self.acl_config_path))
        return os.path.join(os.path.dirname(os.path.abspath(self.kv_config_path)), "plain_acl.yml")

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> NamesrvConfig:
        """Build a config from RocketMQ-named keys; unknown keys or bad values raise ConfigError."""
        return cls().updated(props, at_runtime=False)

    def updated(self, props: Mapping[str, str], *, at_runtime: bool = True) -> NamesrvConfig:
        """A copy with `props` applied.

        With `at_runtime` (UPDATE_NAMESRV_CONFIG), keys that only take effect
        at start-up (the listen address, the KV file) are refused, as RocketMQ
        refuses its config black list.
        """
        changes: dict[str, object] = {}
        tls_props, props = split_tls_properties({k.strip(): v for k, v in props.items()})
        if tls_props:
            if at_runtime:
                raise ConfigError(f"namesrv config key {next(iter(tls_props))} cannot be changed while running")
            changes["tls"] = TlsSettings.from_properties(tls_props)
        inert = dict(self.rocketmq_only)
        for key, raw in props.items():
            key = key.strip()
            spec = _KEYS.get(key)
            if spec is None:
                catalogued = NAMESRV_KEYS.get(key)
                if catalogued is None:
                    raise ConfigError(f"unknown namesrv config key: {key}{suggest(key, [*_KEYS, *NAMESRV_KEYS])}")
                try:
                    inert[key] = _check_inert(catalogued.java_type, raw.strip())
                except ValueError as exc:
                    raise ConfigError(f"bad value for namesrv config key {key}: {raw!r} ({exc})") from None
                continue
            name, parse = spec
            if at_runtime and key in STARTUP_ONLY_KEYS:
                raise ConfigError(f"namesrv config key {key} cannot be changed while running")
            try:
                changes[name] = parse(raw.strip())
            except ValueError as exc:
                raise ConfigError(f"bad value for namesrv config key {key}: {raw!r} ({exc})") from None
        return replace(self, rocketmq_only=tuple(inert.items()), **changes)  # type: ignore[arg-type]

    def file_properties(self) -> dict[str, str]:
        """What UPDATE_NAMESRV_CONFIG writes back: every key OrbitMQ applies, and the keys without
        effect here that were given (those never set stay out, so a restart warns about the same)."""
        props = self.to_properties()
        props.update(self.tls.to_properties(reveal_passwords=True))
        given = dict(self.rocketmq_only)
        for key, spec in NAMESRV_KEYS.items():
            if spec.ignored and key not in given:
                props.pop(key, None)
        return props

    def to_properties(self) -> dict[str, str]:
        """Every setting under its RocketMQ key, values as a properties file writes them."""
        out: dict[str, str] = {}
        for f in fields(self):
            key = _KEY_OF_FIELD.get(f.name)
            if key is None:
                continue
            value = getattr(self, f.name)
            out[key] = ("true" if value else "false") if isinstance(value, bool) else str(value)
        out.update(self.tls.to_properties())
        given = dict(self.rocketmq_only)
        for key, spec in NAMESRV_KEYS.items():
            if key not in out:
                out[key] = given.get(key, spec.default)
        return out


def _check_inert(java_type: str, text: str) -> str:
    """A value of a key without effect here, checked as RocketMQ would parse it (ValueError)."""
    if java_type == "boolean":
        return "true" if parse_java_boolean(text) else "false"
    if java_type == "int":
        return str(java_int(text))
    if java_type == "long":
        return str(java_long(text))
    if java_type in ("double", "float"):
        java_double(text)
    return text


def _parse_bool(text: str) -> bool:
    # Java's Boolean.parseBoolean: "true" in any case is true, anything else false.
    # We are stricter so a typo is noticed.
    return parse_java_boolean(text)


def _parse_int(text: str) -> int:
    return java_long(text)


def _parse_str(text: str) -> str:
    return text


_KEYS: dict[str, tuple[str, Callable[[str], object]]] = {
    "listenHost": ("listen_host", _parse_str),
    "listenPort": ("listen_port", _parse_int),
    "serverSocketBacklog": ("server_socket_backlog", _parse_int),
    "kvConfigPath": ("kv_config_path", _parse_str),
    "configStorePath": ("config_store_path", _parse_str),
    "orderMessageEnable": ("order_message_enable", _parse_bool),
    "scanNotActiveBrokerInterval": ("scan_not_active_broker_interval_ms", _parse_int),
    "brokerChannelExpiredTime": ("broker_channel_expired_time_ms", _parse_int),
    "maxFrameLength": ("max_frame_length", _parse_int),
    "remotingMemoryBudget": ("remoting_memory_budget", _parse_int),
    "aclEnable": ("acl_enable", _parse_bool),
    "aclConfigPath": ("acl_config_path", _parse_str),
    "metricsExporterType": ("metrics_exporter_type", _parse_str),
    "metricsPromExporterHost": ("metrics_prom_exporter_host", _parse_str),
    "metricsPromExporterPort": ("metrics_prom_exporter_port", _parse_int),
}
_KEY_OF_FIELD: dict[str, str] = {name: key for key, (name, _) in _KEYS.items()}

#: Every key that sets something.
KNOWN_KEYS = frozenset(_KEYS)

#: Keys that bind sockets or open files at start-up.
STARTUP_ONLY_KEYS = frozenset({
    "listenHost", "listenPort", "serverSocketBacklog", "kvConfigPath", "configStorePath", "maxFrameLength", "remotingMemoryBudget",
    # Turning ACL off over the wire would let a request lift its own check.
    "aclEnable", "aclConfigPath",
    "metricsExporterType", "metricsPromExporterHost", "metricsPromExporterPort",
})

def format_properties(props: Mapping[str, str]) -> str:
    """Properties text with one `key=value` line per entry, as GET_NAMESRV_CONFIG returns it."""
    return format_java_properties(props, sort=False)
