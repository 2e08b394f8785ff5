"""The stored-record codec: RocketMQ's message layout in the CommitLog and in pull bodies.

Layout of one record (protocol reference §5.1), big-endian::

    TOTALSIZE                  int    whole record, this field included
    MAGICCODE                  int    0xDAA320A7 (v1: one-byte topic length)
    BODYCRC                    int    crc32(stored body) & 0x7FFFFFFF
    QUEUEID                    int
    FLAG                       int    user flag
    QUEUEOFFSET                long   logical offset in the ConsumeQueue
    PHYSICALOFFSET             long   CommitLog offset of this record
    SYSFLAG                    int    §5.3
    BORNTIMESTAMP              long   ms
    BORNHOST                   4 or 16 address bytes + int port (by SYSFLAG 0x10)
    STORETIMESTAMP             long   ms
    STOREHOST                  4 or 16 address bytes + int port (by SYSFLAG 0x20)
    RECONSUMETIMES             int
    PREPAREDTRANSACTIONOFFSET  long
    BODY                       int length + bytes
    TOPIC                      byte length + UTF-8 bytes (v2 records: short length)
    PROPERTIES                 short length + property string (§5.5)

The codec never touches a file: it reads from and writes into buffers the
store maps. Encoding writes straight into a writable buffer with
`struct.pack_into` and slice assignment, so an append copies the body once.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from typing import Final, NamedTuple

from orbitmq.common import properties as mc
from orbitmq.common.message import Message, MessageExt
from orbitmq.common.msgid import format_host, offset_msg_id_from_bytes, parse_host
from orbitmq.common.sysflag import (
    BORNHOST_V6,
    COMPRESSED,
    COMPRESSION_LZ4,
    COMPRESSION_TYPE_MASK,
    COMPRESSION_ZLIB,
    COMPRESSION_ZSTD,
    HOST_V6_BITS,
    STOREHOST_V6,
)
from orbitmq.errors import CorruptRecord

Buffer = bytes | bytearray | memoryview

MAGIC_V1: Final = -626843481  # 0xDAA320A7
MAGIC_V2: Final = -626843477  # 0xDAA320AB, 5.x records with a two-byte topic length
BLANK_MAGIC: Final = -875286124  # 0xCBD43194, end-of-file filler in the CommitLog


MAX_TOPIC_BYTES_V1: Final = 127

RECORD_PREFIX = struct.Struct(
    ">i"  # TOTALSIZE
    "i"  # MAGICCODE
    "i"  # BODYCRC
    "i"  # QUEUEID
    "i"  # FLAG
    "q"  # QUEUEOFFSET
    "q"  # PHYSICALOFFSET
    "i"  # SYSFLAG
)


def _middle(born_ip_len: int, store_ip_len: int) -> struct.Struct:
    return struct.Struct(
        ">q"  # BORNTIMESTAMP
        f"{born_ip_len}s"  # BORNHOST address
        "i"  # BORNHOST port
        "q"  # STORETIMESTAMP
        f"{store_ip_len}s"  # STOREHOST address
        "i"  # STOREHOST port
        "i"  # RECONSUMETIMES
        "q"  # PREPAREDTRANSACTIONOFFSET
        "i"  # BODY length
    )


# The fixed part after the prefix, by the SYSFLAG host bits.
_MIDDLE_BYHOST_V6_BITS: Final = {
    0: _middle(4, 4),
    BORNHOST_V6: _middle(16, 4),
    STOREHOST_V6: _middle(4, 16),
    BORNHOST_V6 | STOREHOST_V6: _middle(16, 16),
}
_PREFIX_SIZE = RECORD_PREFIX.size  # 40
_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
BLANK_RECORD = struct.Struct(
    ">i"  # TOTALSIZE: the bytes left in the file
    "i"  # MAGICCODE: BLANK_MAGIC
)

#: The smallest record (empty body, topic and properties, IPv4 hosts).
MIN_RECORD_SIZE: Final = 91


class UnsupportedCompression(CorruptRecord):
    """A body is compressed with an algorithm this build cannot decompress (LZ4 or ZSTD)."""


def body_crc(data: Buffer) -> int:
    """BODYCRC: CRC-32 (zlib polynomial) of the bytes with the sign bit cleared (§5.12)."""
    return zlib.crc32(data) & 0x7FFFFFFF


def host_flags(born_host: str, store_host: str) -> int:
    """The SYSFLAG host bits the two ``"ip:port"`` hosts need."""
    bits = BORNHOST_V6 if len(parse_host(born_host).ip) == 16 else 0
    if len(parse_host(store_host).ip) == 16:
        bits |= STOREHOST_V6
    return bits


def record_size(body_len: int, topic_len: int, properties_len: int, sys_flag: int = 0) -> int:
    """Bytes of a v1 record with these field lengths (UTF-8 byte counts), hosts per `sys_flag`."""
    size = MIN_RECORD_SIZE + body_len + topic_len + properties_len
    if sys_flag & BORNHOST_V6:
        size += 12
    if sys_flag & STOREHOST_V6:
        size += 12
    return size


def encode_record_into(
    buf: bytearray | memoryview,
    pos: int,
    *,
    topic: bytes,
    body: Buffer,
    properties: bytes,
    queue_id: int = 0,
    flag: int = 0,
    queue_offset: int = 0,
    physical_offset: int = 0,
    sys_flag: int = 0,
    born_timestamp: int = 0,
    born_host: str = "127.0.0.1:0",
    store_timestamp: int = 0,
    store_host: str = "127.0.0.1:0",
    reconsume_times: int = 0,
    prepared_transaction_offset: int = 0,
    crc: int | None = None,
) -> int:
    """Write one v1 record at `buf[pos:]` and return its size.

    `topic` and `properties` are UTF-8 bytes (the caller usually has them
    cached). The SYSFLAG host bits are set from the hosts, whatever
    `sys_flag` says. `crc` is computed from `body` when not given. Raises
    ValueError when a field does not fit the format (topic over 127 bytes,
    properties over 32767 bytes, a host that is not "ip:port") before writing
    anything. The caller reserves `record_size(...)` bytes at `pos` first;
    nothing past them is touched.
    """
    born = parse_host(born_host)
    store = parse_host(store_host)
    sys_flag &= ~HOST_V6_BITS
    if len(born.ip) == 16:
        sys_flag |= BORNHOST_V6
    if len(store.ip) == 16:
        sys_flag |= STOREHOST_V6
    topic_len = len(topic)
    props_len = len(properties)
    if topic_len > MAX_TOPIC_BYTES_V1:
        raise ValueError(f"topic is {topic_len} bytes; a v1 record holds at most {MAX_TOPIC_BYTES_V1}")
    if props_len > mc.MAX_PROPERTIES_BYTES:
        raise ValueError(f"properties are {props_len} bytes; at most {mc.MAX_PROPERTIES_BYTES} fit")
    body_len = len(body)
    total = record_size(body_len, topic_len, props_len, sys_flag)
    if crc is None:
        crc = zlib.crc32(body) & 0x7FFFFFFF
    RECORD_PREFIX.pack_into(
        buf, pos, total, MAGIC_V1, crc, queue_id, flag, queue_offset, physical_offset, sys_flag
    )
    middle = _MIDDLE_BYHOST_V6_BITS[sys_flag & HOST_V6_BITS]
    p = pos + _PREFIX_SIZE
    middle.pack_into(
        buf, p, born_timestamp, born.ip, born.port, store_timestamp, store.ip, store.port,
        reconsume_times, prepared_transaction_offset, body_len,
    )
    p += middle.size
    buf[p : p + body_len] = body
    p += body_len
    buf[p] = topic_len
    p += 1
    buf[p : p + topic_len] = topic
    p += topic_len
    _U16.pack_into(buf, p, props_len)
    p += 2
    buf[p : p + props_len] = properties
    return total


def encode_record(*, topic: bytes, body: Buffer, properties: bytes, **fields: int | str | None) -> bytes:
    """`encode_record_into` into a fresh bytes object (same keyword arguments, minus `buf`/`pos`)."""
    bits = host_flags(str(fields.get("born_host", "127.0.0.1:0")), str(fields.get("store_host", "127.0.0.1:0")))
    out = bytearray(record_size(len(body), len(topic), len(properties), bits))
    encode_record_into(out, 0, topic=topic, body=body, properties=properties, **fields)  # type: ignore[arg-type]
    return bytes(out)


def encode_blank_into(buf: bytearray | memoryview, pos: int, size: int) -> None:
    """Write the 8-byte end-of-file marker saying the last `size` bytes of the file are unused."""
    BLANK_RECORD.pack_into(buf, pos, size, BLANK_MAGIC)


def _decompress(body: bytes, sys_flag: int) -> bytes:
    kind = sys_flag & COMPRESSION_TYPE_MASK
    if kind in (0, COMPRESSION_ZLIB):
        try:
            return zlib.decompress(body)
        except zlib.error as exc:
            raise CorruptRecord(f"body marked zlib-compressed does not inflate: {exc}") from exc
    name = {COMPRESSION_LZ4: "LZ4", COMPRESSION_ZSTD: "ZSTD"}.get(kind, f"type {kind >> 8}")
    raise UnsupportedCompression(f"body is compressed with {name} (sysflag {sys_flag:#x}); only zlib is supported")


def decode_record(buf: Buffer, pos: int = 0, *, with_body: bool = True, decompress: bool = True) -> MessageExt:
    """Decode the record at `buf[pos:]`.

    Raises `CorruptRecord` when the bytes are not a whole, self-consistent
    message record (bad magic, truncated, or TOTALSIZE not matching the field
    lengths) and `UnsupportedCompression` for LZ4/ZSTD bodies when
    `decompress` is set. With `with_body=False` the body is left empty (the
    properties are still decoded). The CRC is not checked here; see
    `check_record`.
    """
    end_of_buf = len(buf)
    try:
        total, magic, crc, queue_id, flag, queue_offset, phy, sys_flag = RECORD_PREFIX.unpack_from(buf, pos)
        if magic != MAGIC_V1 and magic != MAGIC_V2:
            raise CorruptRecord(f"bad magic code {magic & 0xFFFFFFFF:#010x} at {pos}")
        if total < MIN_RECORD_SIZE or pos + total > end_of_buf:
            raise CorruptRecord(f"record size {total} at {pos} does not fit the {end_of_buf - pos} bytes left")
        middle = _MIDDLE_BYHOST_V6_BITS[sys_flag & HOST_V6_BITS]
        (born_ts, born_ip, born_port, store_ts, store_ip, store_port, reconsume, prepared, body_len) = (
            middle.unpack_from(buf, pos + _PREFIX_SIZE)
        )
        p = pos + _PREFIX_SIZE + middle.size
        body_start = p
        p += body_len
        if magic == MAGIC_V1:
            topic_len = buf[p]
            p += 1
        else:
            (topic_len,) = _U16.unpack_from(buf, p)
            p += 2
        topic_start = p
        p += topic_len
        (props_len,) = _U16.unpack_from(buf, p)
        p += 2
        if body_len < 0 or p + props_len != pos + total:
            raise CorruptRecord(f"record at {pos}: field lengths do not add up to TOTALSIZE {total}")
        topic = bytes(buf[topic_start : topic_start + topic_len]).decode("utf-8", "replace")
        props = mc.decode_properties(buf[p : p + props_len]) if props_len else {}
    except (struct.error, IndexError) as exc:
        raise CorruptRecord(f"record at {pos} is truncated") from exc
    body = b""
    if with_body and body_len:
        body = bytes(buf[body_start : body_start + body_len])
        if decompress and sys_flag & COMPRESSED:
            body = _decompress(body, sys_flag)
    offset_id = offset_msg_id_from_bytes(store_ip, store_port, phy)
    return MessageExt(
        topic=topic,
        body=body,
        flag=flag,
        properties=props,
        queue_id=queue_id,
        store_size=total,
        queue_offset=queue_offset,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=format_host(born_ip, born_port),
        store_timestamp=store_ts,
        store_host=format_host(store_ip, store_port),
        msg_id=props.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or offset_id,
        offset_msg_id=offset_id,
        commit_log_offset=phy,
        body_crc=crc,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
    )


def iter_records(buf: Buffer, *, with_body: bool = True, decompress: bool = True) -> Iterator[MessageExt]:
    """Walk a pull/query body (records back to back) by TOTALSIZE.

    Like the Java client, stops quietly at the first record that fails to
    decode (a torn tail yields the whole records before it). A body compressed
    with an unsupported algorithm raises `UnsupportedCompression` instead, so
    messages are never dropped silently.
    """
    pos = 0
    end = len(buf)
    while pos < end:
        try:
            msg = decode_record(buf, pos, with_body=with_body, decompress=decompress)
        except UnsupportedCompression:
            raise
        except CorruptRecord:
            return
        yield msg
        pos += msg.store_size


def check_record(buf: Buffer, pos: int = 0, *, check_crc: bool = False) -> int:
    """Validate the record at `buf[pos:]` for recovery and return its size.

    Returns 0 for the end-of-file blank record. Raises `CorruptRecord` when
    the magic code is unknown, the record is truncated, TOTALSIZE differs from
    the size computed from the field lengths, or (with `check_crc`) BODYCRC
    does not match the stored body.
    """
    try:
        total, magic = BLANK_RECORD.unpack_from(buf, pos)
    except struct.error as exc:
        raise CorruptRecord(f"no record header at {pos}") from exc
    if magic == BLANK_MAGIC:
        return 0
    try:
        _, magic, crc, _, _, _, _, sys_flag = RECORD_PREFIX.unpack_from(buf, pos)
        if magic != MAGIC_V1 and magic != MAGIC_V2:
            raise CorruptRecord(f"bad magic code {magic & 0xFFFFFFFF:#010x} at {pos}")
        if total < MIN_RECORD_SIZE or pos + total > len(buf):
            raise CorruptRecord(f"record size {total} at {pos} does not fit the {len(buf) - pos} bytes left")
        middle = _MIDDLE_BYHOST_V6_BITS[sys_flag & HOST_V6_BITS]
        body_start = pos + _PREFIX_SIZE + middle.size
        (body_len,) = _I32.unpack_from(buf, body_start - 4)
        p = body_start + body_len
        if magic == MAGIC_V1:
            topic_len = buf[p]
            p += 1
        else:
            (topic_len,) = _U16.unpack_from(buf, p)
            p += 2
        p += topic_len
        (props_len,) = _U16.unpack_from(buf, p)
    except (struct.error, IndexError) as exc:
        raise CorruptRecord(f"record at {pos} is truncated") from exc
    if body_len < 0 or p + 2 + props_len != pos + total:
        raise CorruptRecord(f"record at {pos}: field lengths do not add up to TOTALSIZE {total}")
    if check_crc and (zlib.crc32(buf[body_start : body_start + body_len]) & 0x7FFFFFFF) != crc:
        raise CorruptRecord(f"record at {pos}: body CRC mismatch")
    return total


# --- batch items (SEND_BATCH_MESSAGE body, §5.8) -------------------------------------

BATCH_ITEM_HEAD = struct.Struct(
    ">i"  # TOTALSIZE: 20 + L + 2 + P
    "i"  # MAGICCODE: 0, not checked
    "i"  # BODYCRC: 0, the broker computes it
    "i"  # FLAG
    "i"  # BODY length L
)


class BatchItem(NamedTuple):
    """One decoded batch item; `body` and `properties` are views into the batch body (no copy)."""

    flag: int
    body: memoryview
    properties: memoryview


def encode_batch(messages: Iterable[Message]) -> bytes:
    """Encode messages as a `SEND_BATCH_MESSAGE` body, one item per message, in order."""
    parts: list[bytes] = []
    for msg in messages:
        props = mc.encode_properties_bytes(msg.properties)
        if len(props) > mc.MAX_PROPERTIES_BYTES:
            raise ValueError(f"properties are {len(props)} bytes; at most {mc.MAX_PROPERTIES_BYTES} fit")
        body = msg.body
        parts.append(BATCH_ITEM_HEAD.pack(22 + len(body) + len(props), 0, 0, msg.flag, len(body)))
        parts.append(bytes(body))
        parts.append(_U16.pack(len(props)))
        parts.append(props)
    return b"".join(parts)


def iter_batch_items(body: Buffer) -> Iterator[BatchItem]:
    """Split a batch body into items without copying.

    Raises `CorruptRecord` when an item is truncated or its TOTALSIZE does
    not match its lengths (a broker answers 13 MESSAGE_ILLEGAL).
    """
    view = memoryview(body).cast("B") if not isinstance(body, memoryview) else body
    pos = 0
    end = len(view)
    while pos < end:
        try:
            total, _, _, flag, body_len = BATCH_ITEM_HEAD.unpack_from(view, pos)
            body_start = pos + 20
            (props_len,) = _U16.unpack_from(view, body_start + body_len) if body_len >= 0 else (-1,)
        except struct.error as exc:
            raise CorruptRecord(f"batch item at {pos} is truncated") from exc
        if body_len < 0 or props_len < 0 or total != 22 + body_len + props_len or pos + total > end:
            raise CorruptRecord(f"batch item at {pos}: size {total} does not match its fields")
        props_start = body_start + body_len + 2
        yield BatchItem(flag, view[body_start : body_start + body_len], view[props_start : props_start + props_len])
        pos += total


def decode_batch(body: Buffer, topic: str = "") -> list[Message]:
    """Decode a batch body into messages (bodies copied, properties decoded)."""
    return [
        Message(topic=topic, body=bytes(item.body), flag=item.flag, properties=mc.decode_properties(item.properties))
        for item in iter_batch_items(body)
    ]
