"""Subscriptions by tag expression (RocketMQ's `SubscriptionData` and `FilterAPI`, §4.7, §5.2, §5.10).

A tag expression is ``*`` (everything) or tags joined by ``||``
(``TagA || TagB``). Brokers filter by the tags' hash codes; clients then
re-check the real tag strings, since hashes collide.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from orbitmq.common.hashing import java_string_hash
from orbitmq.errors import SubscriptionParseFailed

SUB_ALL: Final = "*"
EXPRESSION_TAG: Final = "TAG"
EXPRESSION_SQL92: Final = "SQL92"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class SubscriptionData:
    """One topic subscription as clients send it in heartbeats.

    `tags_set` and `code_set` keep first-seen order without duplicates (Java
    holds them in hash sets, whose order nobody may rely on). For an SQL92
    subscription, `sub_string` is the expression and both sets are empty.
    """

    topic: str
    sub_string: str = SUB_ALL
    tags_set: tuple[str, ...] = ()
    code_set: tuple[int, ...] = ()
    sub_version: int = field(default_factory=_now_ms)
    expression_type: str = EXPRESSION_TAG
    class_filter_mode: bool = False

    @property
    def is_all(self) -> bool:
        return self.sub_string == SUB_ALL

    def matches_tags_code(self, tags_code: int | None) -> bool:
        """The broker's ConsumeQueue check: `*` matches everything, else the code's low 32 bits must be in `code_set`.

        Non-TAG subscriptions and class-filter mode pass here (they are judged elsewhere).
        """
        if tags_code is None or self.class_filter_mode or self.expression_type != EXPRESSION_TAG:
            return True
        if self.sub_string == SUB_ALL:
            return True
        low = tags_code & 0xFFFFFFFF
        if low & 0x80000000:
            low -= 0x1_0000_0000
        return low in self.code_set

    def matches_tag(self, tags: str | None) -> bool:
        """The client's re-check of a pulled message's TAGS value (§5.2)."""
        if not self.tags_set or self.class_filter_mode or self.expression_type != EXPRESSION_TAG:
            return True
        return tags is not None and tags in self.tags_set

    def to_json_dict(self) -> dict[str, Any]:
        """The fastjson shape (field names as Java writes them; `filterClassSource` never appears)."""
        return {
            "classFilterMode": self.class_filter_mode,
            "codeSet": list(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": list(self.tags_set),
            "topic": self.topic,
        }

    @classmethod
    def from_json_dict(cls, data: Mapping[str, Any]) -> SubscriptionData:
        """Read the fastjson shape leniently: missing fields take Java's defaults.

        Raises `SubscriptionParseFailed` when `topic` is missing or a field has the wrong type.
        """
        try:
            topic = data["topic"]
            if not isinstance(topic, str):
                raise TypeError("topic must be a string")
            sub_string = data.get("subString") or SUB_ALL
            tags = _unique(str(t) for t in data.get("tagsSet") or ())
            codes = _unique(int(c) for c in data.get("codeSet") or ())
            return cls(
                topic=topic,
                sub_string=str(sub_string),
                tags_set=tags,
                code_set=codes,
                sub_version=int(data.get("subVersion") or 0),
                expression_type=str(data.get("expressionType") or EXPRESSION_TAG),
                class_filter_mode=bool(data.get("classFilterMode", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SubscriptionParseFailed(f"bad subscription data: {exc}") from exc


def _unique(items: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(dict.fromkeys(items))


def build_subscription(
    topic: str,
    expression: str | None,
    expression_type: str | None = EXPRESSION_TAG,
    *,
    sub_version: int | None = None,
) -> SubscriptionData:
    """Parse a subscription expression the way Java's `FilterAPI.build` does.

    For TAG (or no type): None, empty or ``*`` subscribe to everything;
    otherwise the expression is split on ``||``, each part trimmed, empty
    parts dropped, and each tag's `String.hashCode` recorded. Other types
    (SQL92) keep the expression as is. `sub_version` defaults to now in ms.
    """
    version = _now_ms() if sub_version is None else sub_version
    if expression_type is None or expression_type == EXPRESSION_TAG:
        if expression is None or expression == "" or expression == SUB_ALL:
            return SubscriptionData(topic, SUB_ALL, sub_version=version)
        tags = _unique(t for t in (part.strip() for part in expression.split("||")) if t)
        return SubscriptionData(
            topic, expression, tags, _unique(java_string_hash(t) for t in tags), sub_version=version
        )
    if not expression:
        raise SubscriptionParseFailed(f"empty {expression_type} expression for topic {topic}")
    return SubscriptionData(topic, expression, sub_version=version, expression_type=expression_type)
