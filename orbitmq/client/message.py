"""The client's Message: the shared model with a friendlier constructor.

`Message("T", b"body", tags="TagA", keys=["k1"], properties={"a": "1"})`
sets the system properties through their accessors and the user properties
through `put_user_property`, so reserved names and separator characters are
refused at construction rather than at the broker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from orbitmq.common.message import Message as _Message
from orbitmq.common.message import MessageExt

__all__ = ["Message", "MessageExt"]


class Message(_Message):
    __slots__ = ()

    def __init__(
        self,
        topic: str,
        body: bytes = b"",
        *,
        tags: str | None = None,
        keys: str | Iterable[str] | None = None,
        properties: Mapping[str, str] | None = None,
        flag: int = 0,
        delay_time_level: int = 0,
        wait_store_msg_ok: bool = True,
    ) -> None:
        super().__init__(topic, bytes(body), flag, {})
        if tags is not None:
            self.tags = tags
        if keys is not None:
            self.keys = keys
        if delay_time_level:
            self.delay_time_level = delay_time_level
        # Java's Message constructor always sets WAIT; brokers treat absent as true anyway.
        self.wait_store_msg_ok = wait_store_msg_ok
        for name, value in (properties or {}).items():
            self.put_user_property(name, value)
