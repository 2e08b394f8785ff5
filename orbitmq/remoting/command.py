"""The RemotingCommand: one request or response of RocketMQ's remoting protocol.

A command is plain data. `codec.py` turns commands into frames and back; the
transport moves frames. Field meanings follow RocketMQ 4.9.7's RemotingCommand
(see the protocol reference, section 1.3).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum

#: A body is bytes, a memoryview, or a list of buffers written back to back
#: (pull responses send slices of the mapped CommitLog without joining them).
Buffer = bytes | bytearray | memoryview
Body = Buffer | Sequence[Buffer] | None

RPC_TYPE_RESPONSE = 0x1
RPC_ONEWAY = 0x2

#: The protocol version OrbitMQ announces: RocketMQ V4_9_7's ordinal. Java
#: clients read it from heartbeat responses to decide what the broker supports.
PROTOCOL_VERSION = 407


class SerializeType(IntEnum):
    JSON = 0
    ROCKETMQ = 1


class LanguageCode(IntEnum):
    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12
    NODE_JS = 13


_opaque_counter = itertools.count(1)


def next_opaque() -> int:
    """A process-wide request id, wrapping inside the signed 32-bit range."""
    return next(_opaque_counter) & 0x7FFFFFFF


@dataclass(slots=True)
class RemotingCommand:
    code: int
    ext_fields: dict[str, str] | None = None
    body: Body = None
    remark: str | None = None
    opaque: int = field(default_factory=next_opaque)
    flag: int = 0
    language: int = LanguageCode.PYTHON
    version: int = PROTOCOL_VERSION
    serialize_type: SerializeType = SerializeType.JSON

    # --- construction -------------------------------------------------------

    @classmethod
    def request(
        cls,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: Body = None,
        *,
        oneway: bool = False,
        remark: str | None = None,
    ) -> RemotingCommand:
        return cls(code, ext_fields, body, remark, flag=RPC_ONEWAY if oneway else 0)

    def response(
        self,
        code: int = 0,
        remark: str | None = None,
        ext_fields: dict[str, str] | None = None,
        body: Body = None,
    ) -> RemotingCommand:
        """A response to this request: same opaque and serialization type."""
        return RemotingCommand(
            code,
            ext_fields,
            body,
            remark,
            opaque=self.opaque,
            flag=RPC_TYPE_RESPONSE,
            serialize_type=self.serialize_type,
        )

    # --- flags --------------------------------------------------------------

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RPC_TYPE_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & RPC_ONEWAY)

    # --- helpers ------------------------------------------------------------

    def field(self, name: str, default: str | None = None) -> str | None:
        """One extFields value, or `default` when absent."""
        if self.ext_fields is None:
            return default
        return self.ext_fields.get(name, default)

    def body_bytes(self) -> bytes:
        """The body as one bytes object (joins a list of buffers)."""
        b = self.body
        if b is None:
            return b""
        if isinstance(b, bytes):
            return b
        if isinstance(b, (bytearray, memoryview)):
            return bytes(b)
        return b"".join(bytes(part) for part in b)
