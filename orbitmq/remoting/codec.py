"""RocketMQ remoting frames <-> `RemotingCommand`, without I/O.

Frame layout (all integers big-endian, as Java writes them)::

    +-------------+---------------------+--------------+------------+
    | length  i32 | header-length word  | header H     | body B     |
    +-------------+---------------------+--------------+------------+
    length = 4 + H + B            (bytes after the length field)
    word   = (serialize_type << 24) | H

The header is either compact UTF-8 JSON (type 0, keys in the order a Java
4.9.7 peer writes them) or RocketMQ's binary layout (type 1, `BINARY_FIXED`
below). Bodies are opaque bytes.

`encode` never joins a body: it returns the prefix+header as one buffer
followed by the body buffers, ready for one `writelines`. `FrameDecoder`
keeps one receive buffer and accepts the stream split anywhere. Decoded
bodies are `bytes` objects (one copy out of the receive buffer), so a command
stays valid however long a handler keeps it.
"""

from __future__ import annotations

import struct
from typing import Any, Final

import orjson

from orbitmq.errors import FrameError
from orbitmq.remoting.command import Body, Buffer, LanguageCode, RemotingCommand, SerializeType

#: RocketMQ's default `com.rocketmq.remoting.frameMaxLength`: 16 MiB, not
#: counting the length field itself.
DEFAULT_MAX_FRAME_LENGTH: Final = 16 << 20

PREFIX = struct.Struct(
    ">i"  # length: bytes after this field (4 + H + B)
    "i"  # header-length word: serialize type in the top byte, H in the low 3 bytes
)

BINARY_FIXED = struct.Struct(
    ">h"  # code            signed short; codes above 32767 need the JSON header
    "B"  # language        LanguageCode byte
    "h"  # version         signed short
    "i"  # opaque
    "i"  # flag
    "i"  # remark length R (0 = no remark), then R bytes of UTF-8
)
INT = struct.Struct(">i")  # ext map length E, then each entry's value length
SHORT = struct.Struct(">h")  # each ext map entry's key length

_MAX_HEADER_LENGTH: Final = 0xFFFFFF
_I32_MIN: Final = -(1 << 31)
_I32_MAX: Final = (1 << 31) - 1
_LANGUAGE_NAMES: Final[dict[int, str]] = {m.value: m.name for m in LanguageCode}
_LANGUAGE_BY_NAME: Final[dict[str, int]] = {m.name: m.value for m in LanguageCode}


# --- encoding -------------------------------------------------------------------


def encode(cmd: RemotingCommand) -> list[Buffer]:
    """The frame for `cmd`: one buffer with length, header word and header, then the body buffers.

    The body (bytes, memoryview or a list of buffers) is passed through
    untouched; the length prefix counts all of it. Raises `FrameError` if the
    command cannot be framed (header over 16 MiB, a code that does not fit the
    binary header's short, a non-string ext field under JSON).
    """
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        header = encode_binary_header(cmd)
        type_bits = 1 << 24
    else:
        header = encode_json_header(cmd)
        type_bits = 0
    h = len(header)
    if h > _MAX_HEADER_LENGTH:
        raise FrameError(f"header of {h} bytes exceeds the 24-bit header length field")
    body = cmd.body
    if body is None:
        return [PREFIX.pack(4 + h, type_bits | h) + header]
    if isinstance(body, (bytes, bytearray)):
        return [PREFIX.pack(4 + h + len(body), type_bits | h) + header, body]
    if isinstance(body, memoryview):
        return [PREFIX.pack(4 + h + body.nbytes, type_bits | h) + header, body]
    out: list[Buffer] = [b""]
    size = 0
    for part in body:
        size += part.nbytes if isinstance(part, memoryview) else len(part)
        out.append(part)
    if 4 + h + size > 0x7FFFFFFF:
        raise FrameError(f"frame of {4 + h + size} bytes does not fit the 32-bit length field")
    out[0] = PREFIX.pack(4 + h + size, type_bits | h) + header
    return out


def encode_json_header(cmd: RemotingCommand) -> bytes:
    """The JSON header a Java 4.9.7 peer would write: compact, keys in its (alphabetical) order."""
    header: dict[str, Any] = {"code": cmd.code}
    if cmd.ext_fields is not None:
        header["extFields"] = cmd.ext_fields
    header["flag"] = cmd.flag
    header["language"] = _LANGUAGE_NAMES.get(cmd.language, "OTHER")
    header["opaque"] = cmd.opaque
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = cmd.version
    try:
        return orjson.dumps(header)
    except TypeError as exc:
        raise FrameError(f"header of command code {cmd.code} is not serializable: {exc}") from None


def encode_binary_header(cmd: RemotingCommand) -> bytes:
    """The ROCKETMQ binary header; entries with an empty key or value are left out (Java: null)."""
    remark = cmd.remark.encode() if cmd.remark else b""
    parts: list[bytes] = []
    if cmd.ext_fields:
        for key, value in cmd.ext_fields.items():
            if not key or value is None:
                continue
            k = key.encode()
            v = (value if type(value) is str else _ext_value(value)).encode()
            parts += (SHORT.pack(len(k)), k, INT.pack(len(v)), v)
    ext = b"".join(parts)
    try:
        fixed = BINARY_FIXED.pack(cmd.code, cmd.language, cmd.version, cmd.opaque, cmd.flag, len(remark))
    except struct.error as exc:
        raise FrameError(
            f"command code {cmd.code} (language {cmd.language}, version {cmd.version}) "
            f"does not fit the ROCKETMQ binary header: {exc}"
        ) from None
    return b"".join((fixed, remark, INT.pack(len(ext)), ext))


def body_length(body: Body) -> int:
    """Number of bytes `body` puts on the wire."""
    if body is None:
        return 0
    if isinstance(body, memoryview):
        return body.nbytes
    if isinstance(body, (bytes, bytearray)):
        return len(body)
    return sum(p.nbytes if isinstance(p, memoryview) else len(p) for p in body)


# --- decoding -------------------------------------------------------------------


class FrameDecoder:
    """Turns a byte stream into commands; accepts the stream split at any byte.

    Bytes of an incomplete frame wait in one private receive buffer; complete
    frames are decoded straight from the data passed in when nothing is
    pending, so the common case copies each body once. Raises `FrameError` for
    a length prefix above `max_frame_length` (before buffering the frame), a
    header length beyond the frame, an unknown serialization type, bad JSON or
    bad binary lengths. After a `FrameError` the stream cannot be resynchronised:
    the caller closes the connection.
    """

    __slots__ = ("_failed", "_pending", "max_frame_length")

    def __init__(self, max_frame_length: int = DEFAULT_MAX_FRAME_LENGTH) -> None:
        self.max_frame_length = max_frame_length
        self._pending = bytearray()
        self._failed: FrameError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a complete frame."""
        return len(self._pending)

    @property
    def unfinished_frame_size(self) -> int:
        """Size of the frame being received (length prefix included), 0 when none has begun.

        Until its 4-byte length prefix is complete a frame counts as the bytes seen so far.
        """
        pending = self._pending
        if len(pending) < 4:
            return len(pending)
        return 4 + int.from_bytes(pending[:4], "big", signed=True)

    def release(self) -> None:
        """Drop buffered bytes for good (the connection is gone)."""
        self._pending = bytearray()

    def feed(self, data: Buffer) -> list[RemotingCommand]:
        """Add `data` to the stream; return the commands it completes, in order.

        Once a `FrameError` was raised, every later call raises it again.
        """
        if self._failed is not None:
            raise self._failed
        try:
            return self._feed(data)
        except FrameError as exc:
            self._failed = exc
            self._pending = bytearray()  # the old one may still be pinned by views in the traceback
            raise

    def _feed(self, data: Buffer) -> list[RemotingCommand]:
        pending = self._pending
        if pending:
            pending += data
            with memoryview(pending) as view:
                commands, used = self._decode_frames(view)
            del pending[:used]  # bytearray drops a prefix without moving the rest each time
            return commands
        with memoryview(data) as raw, raw.cast("B") as view:
            commands, used = self._decode_frames(view)
            if used < len(view):
                pending += view[used:]
        return commands

    def _decode_frames(self, view: memoryview) -> tuple[list[RemotingCommand], int]:
        commands: list[RemotingCommand] = []
        pos = 0
        end = len(view)
        max_length = self.max_frame_length
        while end - pos >= 4:
            (length,) = INT.unpack_from(view, pos)
            if length < 4 or length > max_length:
                raise FrameError(f"frame length {length} outside 4..{max_length}")
            if end - pos - 4 < length:
                break
            (word,) = INT.unpack_from(view, pos + 4)
            header_length = word & 0xFFFFFF
            if header_length > length - 4:
                raise FrameError(f"header length {header_length} exceeds frame length {length} - 4")
            start = pos + 8
            body_start = start + header_length
            frame_end = pos + 4 + length
            serialize_type = (word >> 24) & 0xFF
            if serialize_type == 0:
                cmd = decode_json_header(view[start:body_start])
            elif serialize_type == 1:
                cmd = decode_binary_header(view[start:body_start])
            else:
                raise FrameError(f"unknown header serialization type {serialize_type}")
            if frame_end > body_start:
                cmd.body = bytes(view[body_start:frame_end])
            commands.append(cmd)
            pos = frame_end
        return commands, pos


def decode_json_header(raw: Buffer) -> RemotingCommand:
    """A command from a JSON header, as tolerant as the Java parser (see the protocol reference §1.4)."""
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise FrameError(f"header is not valid JSON: {exc}") from None
    if type(obj) is not dict:
        raise FrameError(f"JSON header is a {type(obj).__name__}, not an object")
    ext = obj.get("extFields")
    if ext is not None:
        if type(ext) is not dict:
            raise FrameError(f"extFields is a {type(ext).__name__}, not an object")
        for value in ext.values():
            if type(value) is not str:
                ext = {k: _ext_value(v) for k, v in ext.items() if v is not None}
                break
    remark = obj.get("remark")
    if remark is not None and type(remark) is not str:
        remark = _ext_value(remark)
    language = obj.get("language", 0)  # Java: a missing language is JAVA
    if type(language) is str:
        # Java turns an unknown enum name into null; we keep "some other language".
        language = _LANGUAGE_BY_NAME.get(language, LanguageCode.OTHER)
    elif type(language) is not int:
        language = LanguageCode.OTHER
    code = obj.get("code", 0)
    opaque = obj.get("opaque", 0)
    flag = obj.get("flag", 0)
    version = obj.get("version", 0)
    if type(code) is not int or type(opaque) is not int or type(flag) is not int or type(version) is not int:
        code, opaque, flag, version = (_int_field(obj, k) for k in ("code", "opaque", "flag", "version"))
    if not (_I32_MIN <= code <= _I32_MAX and _I32_MIN <= opaque <= _I32_MAX
            and _I32_MIN <= flag <= _I32_MAX and _I32_MIN <= version <= _I32_MAX):
        raise FrameError(f"JSON header integer out of the Java int range: {code=} {opaque=} {flag=} {version=}")
    # An empty remark (the Go client always sends one) means no remark.
    return RemotingCommand(code, ext, None, remark or None, opaque, flag, language, version, SerializeType.JSON)


def decode_binary_header(raw: memoryview) -> RemotingCommand:
    """A command from a ROCKETMQ binary header; later duplicate ext keys win, as in Java."""
    size = len(raw)
    if size < BINARY_FIXED.size + 4:
        raise FrameError(f"binary header of {size} bytes is shorter than its fixed part")
    code, language, version, opaque, flag, remark_length = BINARY_FIXED.unpack_from(raw, 0)
    pos = BINARY_FIXED.size
    if remark_length < 0 or remark_length > size - pos - 4:
        raise FrameError(f"binary header remark length {remark_length} exceeds the header")
    remark = _utf8(raw[pos : pos + remark_length]) if remark_length else None
    pos += remark_length
    (ext_length,) = INT.unpack_from(raw, pos)
    pos += 4
    if ext_length < 0 or ext_length > size - pos:
        raise FrameError(f"binary header ext map length {ext_length} exceeds the header")
    ext: dict[str, str] | None = None
    if ext_length:
        ext = {}
        end = pos + ext_length
        while pos < end:
            if end - pos < 2:
                raise FrameError("binary header ext map ends inside a key length")
            (key_length,) = SHORT.unpack_from(raw, pos)
            pos += 2
            if key_length < 0 or key_length > end - pos - 4:
                raise FrameError(f"binary header ext key length {key_length} exceeds the map")
            key = _utf8(raw[pos : pos + key_length])
            pos += key_length
            (value_length,) = INT.unpack_from(raw, pos)
            pos += 4
            if value_length < 0 or value_length > end - pos:
                raise FrameError(f"binary header ext value length {value_length} exceeds the map")
            value = _utf8(raw[pos : pos + value_length])
            pos += value_length
            if key and value:  # a zero length decodes as null in Java: the entry is absent
                ext[key] = value
    return RemotingCommand(
        code, ext, None, remark, opaque, flag, language, version, SerializeType.ROCKETMQ
    )


def _utf8(raw: memoryview) -> str:
    try:
        return str(raw, "utf-8")
    except UnicodeDecodeError as exc:
        raise FrameError(f"binary header text is not UTF-8: {exc}") from None


def _ext_value(value: object) -> str:
    """extFields values as Java's Map<String, String> sees them: numbers in decimal, booleans as words."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return orjson.dumps(value).decode()


def _int_field(obj: dict[str, Any], name: str) -> int:
    value = obj.get(name, 0)
    if type(value) is int:
        return value
    if value is None:
        return 0
    if type(value) is str:
        try:
            return int(value)
        except ValueError:
            pass
    raise FrameError(f"JSON header field {name!r} is not an integer: {value!r}")
