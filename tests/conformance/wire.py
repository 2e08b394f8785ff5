"""Frames and bodies as RocketMQ's own clients write and read them, built without orbitmq code.

Requests are written the way the Java client 4.9.x (language JAVA, version 407
by default, ext fields all strings) or the Go client v2 (language "GO",
version 317, `"remark":""`, no serializeTypeCurrentRPC) write them. Responses
are read back the way those clients read them: the JSON header through a
strict parser (ext field values must be strings, as Go's `map[string]string`
requires), bodies through `fastjson_loads` (which accepts the bare numeric
keys fastjson writes), and stored records through `decode_records`, a
re-statement of the Java client's `MessageDecoder.decodes` checks.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any, Self

JAVA_VERSION = 407  # MQVersion.Version.V4_9_7
GO_VERSION = 317


def java_frame(code: int, ext: dict[str, str] | None, body: bytes, opaque: int, *, oneway: bool = False,
               version: int = JAVA_VERSION) -> bytes:
    """A request as Java's RemotingCommand.encode writes it with the JSON serializer."""
    header: dict[str, Any] = {
        "code": code,
        "extFields": ext or {},
        "flag": 2 if oneway else 0,
        "language": "JAVA",
        "opaque": opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": version,
    }
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack(">ii", 4 + len(raw) + len(body), len(raw)) + raw + body


def java_response(opaque: int, code: int = 0, body: bytes = b"") -> bytes:
    """A Java client's answer to a request the broker sent it (flag marks a response)."""
    header = {"code": code, "extFields": {}, "flag": 1, "language": "JAVA", "opaque": opaque,
              "serializeTypeCurrentRPC": "JSON", "version": JAVA_VERSION}
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack(">ii", 4 + len(raw) + len(body), len(raw)) + raw + body


def go_frame(code: int, ext: dict[str, str] | None, body: bytes, opaque: int) -> bytes:
    """A request as rocketmq-client-go's jsonCodec writes it (field order of its struct)."""
    header = {
        "code": code,
        "language": "GO",
        "version": GO_VERSION,
        "opaque": opaque,
        "flag": 0,
        "remark": "",
        "extFields": ext or {},
    }
    raw = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack(">ii", 4 + len(raw) + len(body), len(raw)) + raw + body


def binary_frame(code: int, ext: dict[str, str] | None, body: bytes, opaque: int) -> bytes:
    """A request with the ROCKETMQ (binary) header, as RocketMQSerializable.rocketMQProtocolEncode writes it."""
    ext_bytes = b""
    for key, value in (ext or {}).items():
        k, v = key.encode(), value.encode()
        ext_bytes += struct.pack(">h", len(k)) + k + struct.pack(">i", len(v)) + v
    header = struct.pack(">hbhii", code, 0, JAVA_VERSION, opaque, 0) + struct.pack(">i", 0)
    header += struct.pack(">i", len(ext_bytes)) + ext_bytes
    word = (1 << 24) | len(header)
    return struct.pack(">ii", 4 + len(header) + len(body), word) + header + body


@dataclass
class Reply:
    code: int
    language: Any
    version: int
    opaque: int
    flag: int
    remark: str | None
    ext: dict[str, str]
    body: bytes
    serialize_type: int = 0
    raw_header: dict[str, Any] = field(default_factory=dict)


def parse_reply(frame: bytes) -> Reply:
    """One frame after its length field, read as the Java and Go decoders read it."""
    (word,) = struct.unpack(">i", frame[:4])
    kind, header_len = (word >> 24) & 0xFF, word & 0xFFFFFF
    header, body = frame[4 : 4 + header_len], frame[4 + header_len :]
    if kind == 0:
        doc = json.loads(header)
        ext = doc.get("extFields") or {}
        # Go reads extFields into map[string]string: any non-string value fails the whole response.
        for key, value in ext.items():
            assert isinstance(value, str), f"ext field {key!r} is {value!r}, not a string"
        code = doc["code"]
        assert isinstance(code, int) and -(1 << 15) <= code < (1 << 15), "Go reads code as int16"
        assert -(1 << 15) <= doc["version"] < (1 << 15), "Go reads version as int16"
        return Reply(code, doc.get("language"), doc["version"], doc["opaque"], doc["flag"], doc.get("remark"),
                     dict(ext), body, 0, doc)
    assert kind == 1, f"unknown serialize type {kind}"
    code, lang, version, opaque, flag, remark_len = struct.unpack_from(">hbhiii", header, 0)
    pos = 17
    remark = header[pos : pos + remark_len].decode() if remark_len > 0 else None
    pos += max(remark_len, 0)
    (ext_len,) = struct.unpack_from(">i", header, pos)
    pos += 4
    fields: dict[str, str] = {}
    end = pos + ext_len
    while pos < end:
        (klen,) = struct.unpack_from(">h", header, pos)
        key = header[pos + 2 : pos + 2 + klen].decode()
        pos += 2 + klen
        (vlen,) = struct.unpack_from(">i", header, pos)
        fields[key] = header[pos + 4 : pos + 4 + vlen].decode()
        pos += 4 + vlen
    assert pos == len(header), "binary header has trailing bytes"
    return Reply(code, lang, version, opaque, flag, remark, fields, body, 1)


class Conn:
    """A blocking connection that writes client frames and reads the broker's replies by opaque."""

    def __init__(self, addr: str, timeout: float = 10.0) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.opaque = 100
        self.unsolicited: list[Reply] = []

    def java(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"", **kw: Any) -> Reply:
        self.opaque += 1
        self.sock.sendall(java_frame(code, ext, body, self.opaque, **kw))
        return self.reply_to(self.opaque)

    def java_oneway(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> None:
        self.opaque += 1
        self.sock.sendall(java_frame(code, ext, body, self.opaque, oneway=True))

    def go(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> Reply:
        self.opaque += 1
        self.sock.sendall(go_frame(code, ext, body, self.opaque))
        return self.reply_to(self.opaque)

    def binary(self, code: int, ext: dict[str, str] | None = None, body: bytes = b"") -> Reply:
        self.opaque += 1
        self.sock.sendall(binary_frame(code, ext, body, self.opaque))
        return self.reply_to(self.opaque)

    def reply_to(self, opaque: int) -> Reply:
        while True:
            reply = self.read()
            if reply.flag & 1 and reply.opaque == opaque:
                return reply
            self.unsolicited.append(reply)

    def read(self) -> Reply:
        (length,) = struct.unpack(">i", self._exactly(4))
        return parse_reply(self._exactly(length))

    def _exactly(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the server")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- bodies --------------------------------------------------------------------

_BARE_KEY = re.compile(r'("(?:[^"\\]|\\.)*")|([{,])\s*(-?\d+)\s*:')


def fastjson_loads(data: bytes) -> Any:
    """JSON as fastjson reads it: also accepts bare numeric object keys (`{0:"a"}`), returned as strings."""
    text = data.decode("utf-8")

    def quote(m: re.Match[str]) -> str:
        if m.group(1) is not None:
            return m.group(1)
        return f'{m.group(2)}"{m.group(3)}":'

    return json.loads(_BARE_KEY.sub(quote, text))


def go_broker_addrs(route_body: bytes) -> list[dict[int, str]]:
    """brokerAddrs of each BrokerData as rocketmq-client-go's TopicRouteData.decode cuts them out.

    Go takes the raw text of the object, strips its braces, splits it at commas and
    each piece at its first colon, then drops every double quote.
    """
    doc = fastjson_loads(route_body)
    text = route_body.decode()
    out: list[dict[int, str]] = []
    start = 0
    for _ in doc["brokerDatas"]:
        i = text.index('"brokerAddrs"', start)
        j = text.index("{", i)
        k = text.index("}", j)
        start = k
        addrs: dict[int, str] = {}
        for piece in text[j + 1 : k].split(","):
            c = piece.find(":")
            if c < 0:
                continue
            addrs[int(piece[:c].replace('"', ""))] = piece[c + 1 :].replace('"', "")
        out.append(addrs)
    return out


# --- stored records (MessageDecoder) -------------------------------------------

MESSAGE_MAGIC_CODE = -626843481
BORNHOST_V6_FLAG = 1 << 4
STOREHOSTADDRESS_V6_FLAG = 1 << 5
COMPRESSED_FLAG = 1
COMPRESSION_ZLIB_TYPE = 0x3 << 8
COMPRESSION_TYPE_COMPARATOR = 0x7 << 8


@dataclass
class DecodedMessage:
    store_size: int
    queue_id: int
    flag: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: str
    store_timestamp: int
    store_host: str
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: dict[str, str]
    msg_id: str


def _host(buf: bytes, pos: int, v6: bool) -> tuple[str, bytes, int]:
    n = 16 if v6 else 4
    ip = buf[pos : pos + n]
    (port,) = struct.unpack_from(">i", buf, pos + n)
    text = socket.inet_ntop(socket.AF_INET6 if v6 else socket.AF_INET, ip)
    return f"{text}:{port}", ip + struct.pack(">i", port), pos + n + 4


def decode_properties(text: str) -> dict[str, str]:
    """MessageDecoder.string2messageProperties: pairs split at \\x01, pairs end with \\x02."""
    out: dict[str, str] = {}
    for item in text.split("\x02"):
        if not item:
            continue
        name, sep, value = item.partition("\x01")
        if sep:
            out[name] = value
    return out


def decode_records(buf: bytes, *, check_crc: bool = True) -> list[DecodedMessage]:
    """MessageDecoder.decodes(byteBuffer, readBody=true, deCompressBody=true) with checkCRCOnConsume.

    The Java client loops while bytes remain; a record whose body CRC does not
    match makes decode return null and is dropped (here: an assertion fails).
    """
    out: list[DecodedMessage] = []
    pos = 0
    while pos < len(buf):
        start = pos
        store_size, magic, crc, queue_id, flag, queue_offset, phys, sys_flag, born_ts = struct.unpack_from(
            ">iiiiiqqiq", buf, pos)
        assert magic == MESSAGE_MAGIC_CODE, f"record at {start} has magic {magic:#x}"
        pos += 4 * 5 + 8 + 8 + 4 + 8
        born_host, _, pos = _host(buf, pos, bool(sys_flag & BORNHOST_V6_FLAG))
        (store_ts,) = struct.unpack_from(">q", buf, pos)
        pos += 8
        store_host, store_raw, pos = _host(buf, pos, bool(sys_flag & STOREHOSTADDRESS_V6_FLAG))
        reconsume, prepared, body_len = struct.unpack_from(">iqi", buf, pos)
        pos += 16
        body = buf[pos : pos + body_len]
        pos += body_len
        if check_crc:
            assert zlib.crc32(body) & 0x7FFFFFFF == crc, f"body CRC of the record at {start} does not match"
        if sys_flag & COMPRESSED_FLAG:
            # CompressionType.findByValue: 0 (older clients) and 3 are ZLIB.
            kind = (sys_flag & COMPRESSION_TYPE_COMPARATOR) >> 8
            assert kind in (0, 3), f"record at {start} is compressed with type {kind}"
            body = zlib.decompress(body)
        topic_len = buf[pos]
        topic = buf[pos + 1 : pos + 1 + topic_len].decode()
        pos += 1 + topic_len
        (props_len,) = struct.unpack_from(">h", buf, pos)
        props = decode_properties(buf[pos + 2 : pos + 2 + props_len].decode())
        pos += 2 + props_len
        assert pos - start == store_size, f"record at {start} says {store_size} bytes but holds {pos - start}"
        msg_id = (store_raw + struct.pack(">q", phys)).hex().upper()
        out.append(DecodedMessage(store_size, queue_id, flag, queue_offset, phys, sys_flag, born_ts, born_host,
                                  store_ts, store_host, reconsume, prepared, body, topic, props, msg_id))
    return out


def encode_properties(props: dict[str, str]) -> str:
    """MessageDecoder.messageProperties2String: name \\x01 value \\x02 for each pair."""
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items())


def encode_batch(messages: list[tuple[bytes, dict[str, str]]], flag: int = 0) -> bytes:
    """MessageDecoder.encodeMessages as the Java and Go producers write a batch body."""
    out = b""
    for body, props in messages:
        p = encode_properties(props).encode()
        size = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(p)
        out += struct.pack(">iiiii", size, 0, 0, flag, len(body)) + body + struct.pack(">h", len(p)) + p
    return out


def go_reset_offsets(body: bytes) -> dict[tuple[str, str, int], int]:
    """ResetOffsetBody as rocketmq-client-go's parseFastJsonFormat cuts it apart.

    It takes the text of offsetTable, drops `{{` and the last `}`, splits at `,{`
    and each piece at `}:`, so the keys must be compact objects and the values bare numbers.
    """
    doc_text = body.decode()
    start = doc_text.index('"offsetTable":') + len('"offsetTable":')
    depth, end = 0, start
    for end in range(start, len(doc_text)):
        depth += {"{": 1, "}": -1}.get(doc_text[end], 0)
        if depth == 0:
            break
    table = doc_text[start : end + 1]
    out: dict[tuple[str, str, int], int] = {}
    for piece in table[2:-1].split(",{"):
        key_text, value_text = piece.split("}:")
        mq = json.loads("{" + key_text + "}")
        out[(mq["topic"], mq["brokerName"], mq["queueId"])] = int(value_text)
    return out
