"""Subscriptions: a topic plus a tag expression, as RocketMQ's SubscriptionData.

`"TagA || TagB"` becomes the tag set {TagA, TagB} and the code set of their
Java hash codes (the broker filters by code, the client re-checks the tag
string because codes collide); `"*"` (or an empty expression) means every
message.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from orbitmq.common.hashing import java_string_hash
from orbitmq.errors import ClientError

SUB_ALL = "*"


@dataclass
class SubscriptionData:
    topic: str
    sub_string: str = SUB_ALL
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = field(default_factory=lambda: int(time.time() * 1000))
    expression_type: str = "TAG"

    @classmethod
    def build(cls, topic: str, expression: str | None, expression_type: str = "TAG") -> SubscriptionData:
        """Parse a tag expression the way Java's FilterAPI does (split on `||`, trim, skip blanks)."""
        if expression_type != "TAG":
            # SQL92 text is evaluated by the broker; the client keeps it verbatim.
            if not expression or not expression.strip():
                raise ClientError("an SQL92 subscription needs an expression")
            return cls(topic, expression.strip(), expression_type=expression_type)
        if expression is None or not expression.strip() or expression.strip() == SUB_ALL:
            return cls(topic, SUB_ALL)
        tags: list[str] = []
        for part in expression.split("||"):
            tag = part.strip()
            if tag and tag not in tags:
                tags.append(tag)
        if not tags:
            raise ClientError(f"subscription expression {expression!r} names no tag")
        return cls(topic, expression, tags, [java_string_hash(t) for t in tags])

    @property
    def matches_all(self) -> bool:
        return self.expression_type == "TAG" and not self.tags_set

    def accepts_tag(self, tag: str | None) -> bool:
        """The client-side re-check after the broker's hash filter."""
        if self.expression_type != "TAG" or not self.tags_set:
            return True
        return tag is not None and tag in self.tags_set

    def to_json(self) -> dict[str, Any]:
        """The HeartbeatData form (§4.7)."""
        return {
            "classFilterMode": False,
            "codeSet": list(self.code_set),
            "expressionType": self.expression_type,
            "subString": self.sub_string,
            "subVersion": self.sub_version,
            "tagsSet": list(self.tags_set),
            "topic": self.topic,
        }
