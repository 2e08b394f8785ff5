"""Committed consumer offsets (RocketMQ's ConsumerOffsetManager), as pure state.

The table maps (topic, group) to {queue id: next offset to consume}. The
broker persists it as consumerOffset.json, `{"offsetTable":{"topic@group":
{0:12,1:7}}}` with bare integer inner keys as fastjson writes them (§7.5),
every flushConsumerOffsetInterval (5 s) when it changed, and at shutdown.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetTable:
    """(topic, group) → {queue id: offset}, with a dirty flag for periodic persistence."""

    def __init__(self) -> None:
        self._table: dict[tuple[str, str], dict[int, int]] = {}
        #: True when something changed since the last `mark_clean()`.
        self.dirty = False

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        queues = self._table.setdefault((topic, group), {})
        if queues.get(queue_id) != offset:
            queues[queue_id] = offset
            self.dirty = True

    def query(self, group: str, topic: str, queue_id: int) -> int | None:
        """The stored offset, or None when the group never committed one for the queue."""
        queues = self._table.get((topic, group))
        if queues is None:
            return None
        return queues.get(queue_id)

    def queues(self, group: str, topic: str) -> dict[int, int]:
        return dict(self._table.get((topic, group), {}))

    def groups_of_topic(self, topic: str) -> set[str]:
        return {g for (t, g) in self._table if t == topic}

    def topics_of_group(self, group: str) -> set[str]:
        return {t for (t, g) in self._table if g == group}

    def remove_topic(self, topic: str) -> None:
        for key in [k for k in self._table if k[0] == topic]:
            del self._table[key]
            self.dirty = True

    def remove_group(self, group: str) -> None:
        for key in [k for k in self._table if k[1] == group]:
            del self._table[key]
            self.dirty = True

    def __iter__(self) -> Iterator[tuple[str, str, dict[int, int]]]:
        for (topic, group), queues in list(self._table.items()):
            yield topic, group, dict(queues)

    def mark_clean(self) -> None:
        self.dirty = False

    # --- serialization --------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """ConsumerOffsetSerializeWrapper with int inner keys (written bare by the fastjson writer)."""
        return {
            "offsetTable": {
                f"{topic}{TOPIC_GROUP_SEPARATOR}{group}": dict(queues)
                for (topic, group), queues in self._table.items()
            }
        }

    def load_json(self, obj: Mapping[str, Any]) -> None:
        """Load a saved wrapper. Keys without '@' and non-integer entries are skipped."""
        table = obj.get("offsetTable") or {}
        self._table = {}
        for key, queues in table.items():
            topic, sep, group = str(key).partition(TOPIC_GROUP_SEPARATOR)
            if not sep or not topic or not group or not isinstance(queues, Mapping):
                continue
            parsed: dict[int, int] = {}
            for qid, offset in queues.items():
                try:
                    parsed[int(qid)] = int(offset)
                except (TypeError, ValueError):
                    continue
            self._table[(topic, group)] = parsed
        self.dirty = False
