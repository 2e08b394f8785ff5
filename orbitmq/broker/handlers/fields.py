"""Reading request header fields (extFields) and answering bad requests.

Handlers read the few fields they need with these helpers. A missing or
malformed field raises a `BrokerError` (errors.py) carrying RocketMQ's code
and a remark naming the field; the connection answers every `BrokerError` a
handler raises in one place (`remoting.connection`), so bad input never
reaches the store and never becomes an unexplained SYSTEM_ERROR.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from orbitmq.errors import SystemError_
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer

HandlerFn = Callable[[RemotingCommand, Peer], Awaitable[RemotingCommand | None]]


class Registry(Protocol):
    """Where handler classes register themselves: the remoting server, or the broker's
    wrapper around it that tracks in-flight requests for a draining shutdown."""

    def register(self, code: int, handler: HandlerFn) -> None: ...

    def on_disconnect(self, callback: Callable[[Peer], None]) -> None: ...


def text(request: RemotingCommand, name: str) -> str:
    """A required string field."""
    value = request.field(name)
    if value is None or value == "":
        raise SystemError_(f"the custom field <{name}> is null")
    return value


def optional_text(request: RemotingCommand, name: str, default: str | None = None) -> str | None:
    value = request.field(name)
    return default if value is None or value == "" else value


def integer(request: RemotingCommand, name: str, default: int | None = None) -> int:
    """A required (or defaulted) integer field, decimal as Java writes it."""
    value = request.field(name)
    if value is None or value == "":
        if default is not None:
            return default
        raise SystemError_(f"the custom field <{name}> is null")
    try:
        return int(value)
    except ValueError:
        raise SystemError_(f"the custom field <{name}> is not a number: {value!r}")


def boolean(request: RemotingCommand, name: str, default: bool = False) -> bool:
    """A boolean field: "true" case-insensitively, anything else false (Boolean.parseBoolean)."""
    value = request.field(name)
    if value is None or value == "":
        return default
    return value.lower() == "true"
