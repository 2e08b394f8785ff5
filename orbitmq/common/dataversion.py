"""DataVersion: the (timestamp, counter) pair that marks a change of broker metadata.

The NameServer compares the whole pair to tell whether a broker's topic set
changed (§4.5); the counter grows by one on every change.
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

    def next(self, now_ms: int) -> DataVersion:
        return DataVersion(now_ms, self.counter + 1)

    def to_json(self) -> dict[str, Any]:
        return {"counter": self.counter, "timestamp": self.timestamp}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> DataVersion:
        """Read the JSON shape; missing fields are 0. Raises ValueError for a malformed one."""
        if not obj:
            return cls()
        obj = json_object(obj, "dataVersion")
        return cls(get_int(obj, "timestamp", 0), get_int(obj, "counter", 0))
