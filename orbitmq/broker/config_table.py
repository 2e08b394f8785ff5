"""A broker's named configs with the DataVersion that marks each change, as pure state.

The topic table (topics.json) and the subscription group table
(subscriptionGroup.json) share this shape: configs by name, a DataVersion
whose counter grows on every change (so the broker re-registers and
re-persists), and the JSON wrapper `{"dataVersion": ..., "<table>": {name:
config}}` (§7.5). Subclasses name the JSON table and say how a config is
named, read and checked.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from orbitmq.common.dataversion import DataVersion


class _Config(Protocol):
    def to_json(self) -> dict[str, Any]: ...


C = TypeVar("C", bound=_Config)


class ConfigTable(ABC, Generic[C]):
    #: The wrapper's field that holds the configs (topicConfigTable, subscriptionGroupTable).
    json_table: ClassVar[str]

    def __init__(self, clock_ms: Callable[[], int] | None = None) -> None:
        self._clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self._items: dict[str, C] = {}
        self.data_version = DataVersion(self._clock_ms(), 0)

    # --- what a subclass says -------------------------------------------------

    @abstractmethod
    def name_of(self, config: C) -> str:
        """The name a config is stored under."""

    @abstractmethod
    def read(self, name: str, raw: Mapping[str, Any]) -> C | None:
        """A saved config stored under `name`, or None to drop it (a name no longer legal)."""

    # --- reading ------------------------------------------------------------

    def get(self, name: str) -> C | None:
        return self._items.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[C]:
        return iter(list(self._items.values()))

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        return list(self._items)

    # --- changing -----------------------------------------------------------

    def put(self, config: C) -> bool:
        """Insert or replace a config. Returns True when anything changed."""
        name = self.name_of(config)
        if self._items.get(name) == config:
            return False
        self._items[name] = config
        self._bump()
        return True

    def delete(self, name: str) -> bool:
        if self._items.pop(name, None) is None:
            return False
        self._bump()
        return True

    def _bump(self) -> None:
        self.data_version = self.data_version.next(self._clock_ms())

    # --- serialization -------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """The wrapper the broker persists and answers GET_ALL_* requests with."""
        return {
            "dataVersion": self.data_version.to_json(),
            self.json_table: {name: config.to_json() for name, config in self._items.items()},
        }

    def load_json(self, obj: Mapping[str, Any]) -> None:
        """Replace the table with a saved wrapper."""
        table = obj.get(self.json_table) or {}
        self._items = {}
        for name, raw in table.items():
            config = self.read(str(name), raw)
            if config is not None:
                self._items[self.name_of(config)] = config
        self.data_version = DataVersion.from_json(obj.get("dataVersion"))
