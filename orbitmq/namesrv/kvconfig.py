"""The NameServer's KV config: namespace -> key -> value, persisted as kvConfig.json.

File format (RocketMQ's KVConfigSerializeWrapper): `{"configTable":{ns:{k:v}}}`.
`KVConfig` is the pure table; `KVConfigFile` reads and writes the file. A
write goes to `<file>.tmp`, is fsynced, the previous file is kept as
`<file>.bak`, and the tmp file is renamed over the file, so a crash leaves
either the old or the new table. Loading falls back to `.bak` when the main
file is missing or unreadable (a crash between the two renames).
"""

from __future__ import annotations

import logging
import os
import shutil
from dataclasses import dataclass, field

import orjson

from orbitmq.errors import ConfigError

log = logging.getLogger(__name__)

#: The namespace holding `brokerName:queueNum;...` per ordered topic.
ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"


@dataclass
class KVConfig:
    """namespace -> {key -> value}; empty namespaces are dropped."""

    table: dict[str, dict[str, str]] = field(default_factory=dict)

    def put(self, namespace: str, key: str, value: str) -> bool:
        """Set a value; returns whether the table changed."""
        entries = self.table.setdefault(namespace, {})
        if entries.get(key) == value:
            return False
        entries[key] = value
        return True

    def get(self, namespace: str, key: str) -> str | None:
        return self.table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> bool:
        """Remove a value; returns whether it existed."""
        entries = self.table.get(namespace)
        if entries is None or key not in entries:
            return False
        del entries[key]
        if not entries:
            del self.table[namespace]
        return True

    def namespace(self, namespace: str) -> dict[str, str] | None:
        """A copy of one namespace, or None when it holds nothing."""
        entries = self.table.get(namespace)
        return dict(entries) if entries else None

    def to_json(self) -> bytes:
        return orjson.dumps({"configTable": self.table})

    @classmethod
    def from_json(cls, data: bytes) -> KVConfig:
        """Parse kvConfig.json; raises ConfigError when it is not that shape."""
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ConfigError(f"kvConfig is not JSON: {exc}") from None
        table = doc.get("configTable") if isinstance(doc, dict) else None
        if table is None:
            table = {}
        if not isinstance(table, dict):
            raise ConfigError("kvConfig configTable is not an object")
        out: dict[str, dict[str, str]] = {}
        for ns, entries in table.items():
            if not isinstance(entries, dict):
                raise ConfigError(f"kvConfig namespace {ns!r} is not an object")
            # Java writes strings; accept numbers and booleans from hand-edited files.
            out[ns] = {str(k): v if isinstance(v, str) else orjson.dumps(v).decode() for k, v in entries.items()}
        return cls({ns: entries for ns, entries in out.items() if entries})


@dataclass(frozen=True)
class KVConfigFile:
    """Durable storage of a KVConfig at `path` (blocking I/O: call off the event loop)."""

    path: str

    def load(self) -> KVConfig:
        """The stored table; an empty one when neither the file nor its .bak exists."""
        corrupt = False
        for candidate in (self.path, self.path + ".bak"):
            try:
                with open(candidate, "rb") as f:
                    data = f.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise ConfigError(f"cannot read kvConfig file {candidate}: {exc.strerror or exc}") from None
            if not data.strip():
                continue
            try:
                return KVConfig.from_json(data)
            except ConfigError as exc:
                corrupt = True
                log.error("cannot read %s: %s", candidate, exc)
        if corrupt:
            # Starting empty would overwrite the operator's file on the next put.
            raise ConfigError(f"kvConfig file {self.path} is unreadable and has no usable .bak")
        return KVConfig()

    def write(self, data: bytes) -> None:
        """Replace the file with `data` atomically, keeping the previous content as .bak."""
        directory = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(directory, exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(self.path):
            # A hard link keeps the old content as .bak without copying it.
            bak = self.path + ".bak"
            if os.path.exists(bak):
                os.unlink(bak)
            try:
                os.link(self.path, bak)
            except OSError:
                shutil.copyfile(self.path, bak)
        os.replace(tmp, self.path)
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
