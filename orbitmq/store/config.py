"""StoreConfig: the message store's settings (RocketMQ's `MessageStoreConfig`).

Fields use Python names with units in comments; `from_properties` also takes
RocketMQ's broker.conf keys (storePathRootDir, flushDiskType,
mappedFileSizeCommitLog, fileReservedTime, deleteWhen, ...), including the
historical misspellings RocketMQ users have in their files
(`destroyMapedFileIntervalForcibly`, `warmMapedFileEnable`). An unknown key or
a value that does not parse raises `ConfigError` naming it.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orbitmq.common.javaprops import java_double, java_int, java_long
from orbitmq.common.keycatalog import BROKER_KEYS, parse_java_boolean, suggest
from orbitmq.errors import ConfigError
from orbitmq.store.paths import store_path

#: Bytes of one ConsumeQueue entry (§7.2).
CQ_UNIT_SIZE = 20


class FlushDiskType(str, enum.Enum):
    """When a put is acknowledged relative to the fsync of its record."""

    #: Acknowledge once the record is in the mapped file; a background task fsyncs.
    ASYNC_FLUSH = "ASYNC_FLUSH"
    #: Acknowledge after an fsync (shared by all puts of a group) covers the record.
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(str, enum.Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


@dataclass(frozen=True)
class StoreConfig:
    """Settings of one message store. Defaults are RocketMQ 4.9.7's unless a comment says why not."""

    #: Root folder (commitlog/, consumequeue/, index/, checkpoint, abort, config/). `~` is expanded.
    store_path_root_dir: str = os.path.join("~", "store")
    #: CommitLog folder; empty means `<root>/commitlog`.
    store_path_commit_log: str = ""
    #: ConsumeQueue and index folders; empty means `<root>/consumequeue` and `<root>/index`.
    #: Not RocketMQ 4.9 keys (it always derives them from the root), but its users set them.
    store_path_consume_queue: str = ""
    store_path_index: str = ""
    #: Bytes per CommitLog file (1 GiB). Tests use a few KiB.
    mapped_file_size_commit_log: int = 1 << 30
    #: Bytes per ConsumeQueue file: 300,000 entries of 20 bytes.
    mapped_file_size_consume_queue: int = 300_000 * CQ_UNIT_SIZE
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    #: ASYNC_FLUSH: how often the background flush looks at the CommitLog (ms) ...
    flush_interval_commit_log: int = 500
    #: ... and how many dirty 4 KiB pages make it flush ...
    flush_commit_log_least_pages: int = 4
    #: ... unless this long (ms) passed since the last flush, then any dirty byte does.
    flush_commit_log_thorough_interval: int = 10_000
    #: ConsumeQueue and index background flush, same three knobs.
    flush_interval_consume_queue: int = 1_000
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval: int = 60_000
    #: SYNC_FLUSH: a put whose fsync takes longer than this (ms) gets FLUSH_DISK_TIMEOUT.
    sync_flush_timeout: int = 5_000
    #: SYNC_MASTER: a put whose slave ack takes longer than this (ms) gets FLUSH_SLAVE_TIMEOUT.
    slave_timeout: int = 3_000
    #: Largest body (bytes); a whole record may be up to this plus 64 KiB (§5.9).
    max_message_size: int = 4 * 1024 * 1024
    #: Recovery checks each record's body CRC, not only its magic code and size.
    check_crc_on_recover: bool = True
    #: Hours a CommitLog file is kept after its last write.
    file_reserved_time: int = 72
    #: Hours of the day (";"-separated) at which expired files are deleted.
    delete_when: str = "04"
    #: Percent of the CommitLog disk in use above which files are deleted before they expire.
    disk_max_used_space_ratio: int = 75
    #: Fraction of disk use above which cleaning deletes files at once (RocketMQ system property).
    disk_space_clean_forcibly_ratio: float = 0.85
    #: Fraction of disk use above which puts are refused until it falls back below.
    disk_space_warning_level_ratio: float = 0.90
    clean_file_forcibly_enable: bool = True
    #: Pause (ms) between two CommitLog file deletions, so deletes do not hog the disk.
    delete_commit_log_files_interval: int = 100
    delete_consume_queue_files_interval: int = 100
    #: A file still referenced by a reader is deleted anyway after this long (ms).
    destroy_mapped_file_interval_forcibly: int = 120_000
    #: How often (ms) the cleaning task runs.
    clean_resource_interval: int = 10_000
    #: Pull limits (§5.2): from memory, and when the data is probably on disk.
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    max_transfer_count_on_message_in_disk: int = 8
    #: Percent of physical memory below the CommitLog head that counts as "in memory".
    access_message_in_memory_max_ratio: int = 40
    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    message_index_safe: bool = False
    #: Most messages one query by key returns.
    max_msgs_num_batch: int = 64
    #: Also write zeros over a new mapped file (in the allocation thread) before appends reach it.
    #: Off, as in RocketMQ: every new CommitLog file already gets its blocks reserved with fallocate,
    #: which brings a first write to a fresh page from ~2.6 to ~0.4 µs per KiB here; the
    #: zeros would bring it to ~0.25 µs at the price of writing every file twice.
    warm_mapped_file_enable: bool = False
    #: Create the next CommitLog file in the background while the current one fills.
    preallocate_next_file: bool = True
    #: Accepted for broker.conf compatibility. RocketMQ answers OS_PAGECACHE_BUSY when a put waits
    #: this long for the CommitLog lock; appends here take no lock, so that never happens.
    os_page_cache_busy_timeout_mills: int = 1_000
    # Replication settings live here in RocketMQ, so broker.conf files carry them to the store
    # (the broker's replication reads them).
    #: -1: listenPort + 1 (RocketMQ's rule), and 0 when listenPort is 0 (an ephemeral port).
    ha_listen_port: int = -1
    ha_master_address: str = ""
    ha_send_heartbeat_interval: int = 5_000
    ha_housekeeping_interval: int = 20_000
    ha_transfer_batch_size: int = 32 * 1024
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024
    #: Acknowledgement rule (RocketMQ 5's names; docs/failover-store.md). allAckInSyncStateSet:
    #: a put waits until every member of the in-sync set holds it.
    all_ack_in_sync_state_set: bool = False
    #: Copies, master included, a put waits for when not allAck (controller mode: 1 = the master
    #: alone; a 4.x SYNC_MASTER waits for one slave whatever this says, unless it is above 2).
    in_sync_replicas: int = 1
    #: Controller mode: fewer in-sync copies than this and puts are not acknowledged.
    min_in_sync_replicas: int = 1

    def __post_init__(self) -> None:
        self.validate()

    # --- derived paths -------------------------------------------------------

    @property
    def root_dir(self) -> str:
        return os.path.expanduser(self.store_path_root_dir)

    @property
    def commit_log_dir(self) -> str:
        return os.path.expanduser(self.store_path_commit_log) or store_path(self.root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        return os.path.expanduser(self.store_path_consume_queue) or store_path(self.root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        return os.path.expanduser(self.store_path_index) or store_path(self.root_dir, "index")

    @property
    def checkpoint_path(self) -> str:
        return store_path(self.root_dir, "checkpoint")

    @property
    def abort_path(self) -> str:
        return store_path(self.root_dir, "abort")

    @property
    def config_dir(self) -> str:
        return store_path(self.root_dir, "config")

    @property
    def max_record_size(self) -> int:
        """Largest whole record accepted: the body limit plus 64 KiB for the header fields."""
        return self.max_message_size + 64 * 1024

    @property
    def delete_hours(self) -> frozenset[int]:
        return _parse_hours(self.delete_when)

    # --- checks --------------------------------------------------------------

    def validate(self) -> None:
        """Raise ConfigError when a value cannot work."""
        if self.mapped_file_size_commit_log < 4096:
            raise ConfigError("mappedFileSizeCommitLog must be at least 4096 bytes")
        cq = self.mapped_file_size_consume_queue
        if cq < CQ_UNIT_SIZE or cq % CQ_UNIT_SIZE:
            raise ConfigError("mappedFileSizeConsumeQueue must be a positive multiple of 20")
        if self.max_message_size <= 0:
            raise ConfigError("maxMessageSize must be positive")
        if not 10 <= self.disk_max_used_space_ratio <= 95:
            raise ConfigError("diskMaxUsedSpaceRatio must be between 10 and 95 (percent)")
        for name in ("disk_space_clean_forcibly_ratio", "disk_space_warning_level_ratio"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ConfigError(f"{_camel(name)} must be a fraction in (0, 1]")
        if self.file_reserved_time <= 0:
            raise ConfigError("fileReservedTime must be a positive number of hours")
        _parse_hours(self.delete_when)
        for name in (
            "flush_interval_commit_log", "flush_interval_consume_queue", "sync_flush_timeout",
            "clean_resource_interval", "max_hash_slot_num", "max_index_num",
            "ha_send_heartbeat_interval", "ha_housekeeping_interval", "ha_transfer_batch_size",
            "ha_slave_fallbehind_max", "in_sync_replicas", "min_in_sync_replicas",
        ):
            if getattr(self, name) <= 0:
                raise ConfigError(f"{_camel(name)} must be positive")
        if self.slave_timeout <= 0:
            raise ConfigError("slaveTimeout must be positive")
        if not -1 <= self.ha_listen_port <= 65535:
            raise ConfigError(f"haListenPort {self.ha_listen_port} is not a TCP port (-1: listenPort + 1)")
        if self.ha_master_address:
            host, sep, port = self.ha_master_address.rpartition(":")
            if not sep or not host or not port.isdigit():
                raise ConfigError(f"haMasterAddress {self.ha_master_address!r} is not host:port")

    # --- properties ----------------------------------------------------------

    @classmethod
    def from_properties(cls, props: Mapping[str, str], **overrides: Any) -> StoreConfig:
        """Build a config from broker.conf keys (RocketMQ or Python names).

        `overrides` are Python field names with typed values, applied last.
        Raises ConfigError naming the first key that is unknown or malformed.
        """
        values: dict[str, Any] = {}
        for key, raw in props.items():
            name = _KEY_TO_FIELD.get(key)
            if name is None:
                raise ConfigError(f"unknown store setting {key!r}{suggest(key, _FIELD_TO_KEY.values())}")
            values[name] = _convert(key, name, str(raw))
        ratio = values.get("disk_max_used_space_ratio")
        if ratio is not None:
            # RocketMQ's getter clamps the percentage to 10..95 rather than refusing it.
            values["disk_max_used_space_ratio"] = min(max(ratio, 10), 95)
        values.update(overrides)
        try:
            return cls(**values)
        except TypeError as exc:
            raise ConfigError(str(exc)) from exc

    def changed_keys(self, other: StoreConfig) -> list[str]:
        """RocketMQ names of the settings whose values differ between `self` and `other`."""
        return [_FIELD_TO_KEY[f.name] for f in dataclasses.fields(self)
                if getattr(self, f.name) != getattr(other, f.name)]

    def to_properties(self) -> dict[str, str]:
        """Settings under RocketMQ names, as GET_BROKER_CONFIG shows them."""
        out: dict[str, str] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, enum.Enum):
                text = str(value.value)
            elif isinstance(value, bool):
                text = "true" if value else "false"
            else:
                text = str(value)
            out[_FIELD_TO_KEY[f.name]] = text
        return out


def _parse_hours(text: str) -> frozenset[int]:
    hours: set[int] = set()
    for part in text.split(";"):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or not 0 <= int(part) <= 23:
            raise ConfigError(f"deleteWhen={text!r}: expected ';'-separated hours 0..23")
        hours.add(int(part))
    if not hours:
        raise ConfigError(f"deleteWhen={text!r}: no hour given")
    return frozenset(hours)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


_FIELDS: dict[str, dataclasses.Field[Any]] = {f.name: f for f in dataclasses.fields(StoreConfig)}
_FIELD_TO_KEY: dict[str, str] = {name: _camel(name) for name in _FIELDS}
_FIELD_TO_KEY.update(
    {
        "check_crc_on_recover": "checkCRCOnRecover",
        "destroy_mapped_file_interval_forcibly": "destroyMapedFileIntervalForcibly",
        "warm_mapped_file_enable": "warmMapedFileEnable",
        "os_page_cache_busy_timeout_mills": "osPageCacheBusyTimeOutMills",
    }
)
_KEY_TO_FIELD: dict[str, str] = {key: name for name, key in _FIELD_TO_KEY.items()}
_KEY_TO_FIELD.update({_camel(name): name for name in _FIELDS})
_KEY_TO_FIELD.update({name: name for name in _FIELDS})
_KEY_TO_FIELD.update(
    {
        # Spellings found in RocketMQ code and docs for the same settings.
        "deletePhysicFilesInterval": "delete_commit_log_files_interval",
        "destroyMappedFileIntervalForcibly": "destroy_mapped_file_interval_forcibly",
        "warmMappedFileEnable": "warm_mapped_file_enable",
        "rocketmq.broker.diskSpaceCleanForciblyRatio": "disk_space_clean_forcibly_ratio",
        "rocketmq.broker.diskSpaceWarningLevelRatio": "disk_space_warning_level_ratio",
    }
)


#: Settings UPDATE_BROKER_CONFIG may change while the store runs: the cleaning service, the
#: reader and the put path read them from the store's current config on every use.
RUNTIME_FIELDS = frozenset({
    "file_reserved_time", "delete_when", "disk_max_used_space_ratio", "disk_space_clean_forcibly_ratio",
    "disk_space_warning_level_ratio", "clean_file_forcibly_enable", "delete_commit_log_files_interval",
    "delete_consume_queue_files_interval", "destroy_mapped_file_interval_forcibly",
    "max_transfer_bytes_on_message_in_memory", "max_transfer_count_on_message_in_memory",
    "max_transfer_bytes_on_message_in_disk", "max_transfer_count_on_message_in_disk",
    "access_message_in_memory_max_ratio", "max_message_size", "os_page_cache_busy_timeout_mills",
    "clean_resource_interval",
})


def key_of(name: str) -> str:
    """The RocketMQ key of a StoreConfig field."""
    return _FIELD_TO_KEY[name]


def field_of(key: str) -> str | None:
    """The StoreConfig field a key (RocketMQ or Python spelling) sets, or None."""
    return _KEY_TO_FIELD.get(key)


def _convert(key: str, name: str, raw: str) -> Any:
    kind = _FIELDS[name].type
    text = raw.strip()
    try:
        if kind == "bool":
            return parse_java_boolean(text)
        if kind == "int":
            spec = BROKER_KEYS.get(_FIELD_TO_KEY[name])
            return java_int(text) if spec is not None and spec.java_type == "int" else java_long(text)
        if kind == "float":
            return java_double(text)
        if kind == "FlushDiskType":
            return FlushDiskType(text.upper())
        if kind == "BrokerRole":
            return BrokerRole(text.upper())
        return text
    except ValueError as exc:
        raise ConfigError(f"{key}={raw!r}: {exc}") from exc


__all__ = ["CQ_UNIT_SIZE", "RUNTIME_FIELDS", "BrokerRole", "FlushDiskType", "StoreConfig", "field_of", "key_of"]
