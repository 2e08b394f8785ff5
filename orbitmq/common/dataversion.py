"""DataVersion: the (timestamp, counter) pair that marks a change of broker metadata.

The NameServer compares the whole value to tell whether a broker's topic set
changed (§4.5); the counter grows by one on every change.

`state_version` is RocketMQ 5's stateVersion: in controller mode a master's
epoch, which lets the NameServer refuse a deposed master that registers after
a newer one (docs/failover.md). It is 0 otherwise, and the JSON form carries
it only when it is not 0, so RocketMQ 4.x peers see the shape they know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from orbitmq.common.jsonfields import get_int, json_object


@dataclass(frozen=True, slots=True)
class DataVersion:
    timestamp: int = 0
    counter: int = 0
    state_version: int = 0

    def next(self, now_ms: int, state_version: int | None = None) -> DataVersion:
        """The next version; the state version stays unless a new one is given."""
        state = self.state_version if state_version is None else state_version
        return DataVersion(now_ms, self.counter + 1, state)

    def to_json(self) -> dict[str, Any]:
        obj: dict[str, Any] = {"counter": self.counter, "timestamp": self.timestamp}
        if self.state_version:
            obj["stateVersion"] = self.state_version
        return obj

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> DataVersion:
        """Read the JSON shape; missing fields are 0. Raises ValueError for a malformed one."""
        if not obj:
            return cls()
        obj = json_object(obj, "dataVersion")
        return cls(get_int(obj, "timestamp", 0), get_int(obj, "counter", 0), get_int(obj, "stateVersion", 0))
