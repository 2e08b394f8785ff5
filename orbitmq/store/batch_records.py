"""The batch append loop: SEND_BATCH_MESSAGE items into CommitLog records (the Python reference).

`plan_batch` checks a batch body (§5.8) and sizes the records its items become; `write_batch_v4`
writes those records back to back into the mapped CommitLog and reports, per record, what the
ConsumeQueue and IndexFile need. `orbitmq._speedups` has C twins of both with the same
signatures; `orbitmq.store.kernels` picks one. The two must produce the same bytes and the same
results for every input (tests/store/test_batch_kernels.py), so this file is the specification:
change both together.

Each item is ``TOTALSIZE i32 | MAGIC i32 | BODYCRC i32 | FLAG i32 | BODYLEN i32 | body |
PROPLEN u16 | properties``; its record carries its own properties followed by the batch's
(`extra`, joined with one 0x02 separator), as RocketMQ's `MessageExtBatch` encoder does.
"""

from __future__ import annotations

import struct
import zlib

from orbitmq.common.hashing import tag_hash_code
from orbitmq.store.record_writer import HEAD_V4, peek_property

_ITEM_HEAD = struct.Struct(
    ">i"  # TOTALSIZE: 20 + L + 2 + P
    "i"   # MAGICCODE (not checked)
    "i"   # BODYCRC (not used; the store computes it)
    "i"   # FLAG
    "i"   # BODY length L
)
_U16 = struct.Struct(">H")
_MAGIC_V1 = -626843481  # 0xDAA320A7 as a signed int: the record's MAGICCODE

#: Why a batch is refused: (PutMessageStatus name, remark). Raised as ValueError(kind, remark).
MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"

_TAGS = (b"TAGS\x01", b"\x02TAGS\x01")
_KEYS = (b"KEYS\x01", b"\x02KEYS\x01")
_UNIQ = (b"UNIQ_KEY\x01", b"\x02UNIQ_KEY\x01")


def _peek(raw: bytes, names: tuple[bytes, bytes]) -> str:
    """One property's value ("" when absent or empty); a later duplicate wins, as in Java."""
    return peek_property(raw, *names)


def _item_properties(own: memoryview, extra: bytes) -> bytes:
    if not extra:
        return bytes(own)
    if not len(own):
        return extra
    if own[-1] == 2:
        return b"".join((own, extra))
    return b"".join((own, b"\x02", extra))


def batch_items(
    data: bytes | bytearray | memoryview, extra: bytes, max_props: int
) -> list[tuple[int, memoryview, bytes]]:
    """(flag, body view, record properties) of each item; ValueError(kind, remark) when malformed."""
    body = data if isinstance(data, memoryview) else memoryview(data)
    end = len(body)
    if not end:
        raise ValueError(MESSAGE_ILLEGAL, "batch body holds no message")
    out = []
    pos = 0
    while pos < end:
        if pos + 20 > end:
            raise ValueError(MESSAGE_ILLEGAL, f"bad batch body: item at {pos} is truncated")
        total, _, _, flag, body_len = _ITEM_HEAD.unpack_from(body, pos)
        body_end = pos + 20 + body_len
        if body_len < 0 or body_end + 2 > end:
            raise ValueError(MESSAGE_ILLEGAL, f"bad batch body: item at {pos} is truncated")
        (props_len,) = _U16.unpack_from(body, body_end)
        if total != 22 + body_len + props_len or pos + total > end:
            raise ValueError(MESSAGE_ILLEGAL, f"bad batch body: item at {pos} does not match its size")
        raw = _item_properties(body[body_end + 2 : pos + total], extra)
        if len(raw) > max_props:
            raise ValueError(PROPERTIES_SIZE_EXCEEDED, f"properties are {len(raw)} bytes; at most {max_props} fit")
        out.append((flag, body[pos + 20 : body_end], raw))
        pos += total
    return out


def plan_batch(body: bytes | bytearray | memoryview, extra: bytes, fixed: int, max_props: int) -> tuple[int, int]:
    """(item count, bytes all their records take); ValueError(kind, remark) for a bad body.

    `fixed` is the record size without body and properties (it depends on the topic and the
    host kinds); `max_props` the largest property string a record may hold.
    """
    items = batch_items(body, extra, max_props)
    return len(items), sum(fixed + len(item_body) + len(raw) for _, item_body, raw in items)



def write_batch_v4(
    buf: memoryview,
    pos: int,
    body: bytes | bytearray | memoryview,
    extra: bytes,
    topic_field: bytes,
    fixed: int,
    max_props: int,
    queue_id: int,
    queue_offset: int,
    phys: int,
    sys_flag: int,
    born_ts: int,
    born_ip: bytes,
    born_port: int,
    store_ts: int,
    store_ip: bytes,
    store_port: int,
) -> list[tuple[int, int, str, str]]:
    """Write the batch's records (IPv4 hosts) from `buf[pos]`, the first at CommitLog offset `phys`.

    Returns (record size, tags code, KEYS, UNIQ_KEY) per record, in order; queue offsets are
    `queue_offset`, `queue_offset + 1`, ... The caller has checked with `plan_batch` that the
    records fit; the body is checked again (ValueError before anything is written).
    """
    if len(born_ip) != 4 or len(store_ip) != 4:
        raise TypeError("write_batch_v4 takes 4-byte IPv4 addresses")
    if fixed != HEAD_V4.size + len(topic_field) + 2:
        raise ValueError("fixed must be the IPv4 record head plus the topic field and length")
    items = batch_items(body, extra, max_props)
    total = sum(fixed + len(item_body) + len(raw) for _, item_body, raw in items)
    if pos < 0 or pos + total > len(buf):
        raise ValueError(MESSAGE_ILLEGAL, "the batch does not fit where it was to be written")
    out = []
    for flag, item_body, raw in items:
        size = fixed + len(item_body) + len(raw)
        body_len = len(item_body)
        HEAD_V4.pack_into(
            buf, pos, size, _MAGIC_V1, zlib.crc32(item_body) & 0x7FFFFFFF, queue_id, flag, queue_offset, phys,
            sys_flag, born_ts, born_ip, born_port, store_ts, store_ip, store_port, 0, 0, body_len,
        )
        p = pos + 88
        buf[p : p + body_len] = item_body
        p += body_len
        buf[p : p + len(topic_field)] = topic_field
        p += len(topic_field)
        _U16.pack_into(buf, p, len(raw))
        buf[p + 2 : p + 2 + len(raw)] = raw
        tags = _peek(raw, _TAGS)
        out.append((size, tag_hash_code(tags or None), _peek(raw, _KEYS), _peek(raw, _UNIQ)))
        pos += size
        phys += size
        queue_offset += 1
    return out
