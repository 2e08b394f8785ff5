"""The append hot path's record encoder and property peeking.

`orbitmq.common.record.encode_record_into` is the reference codec. This
module writes the same bytes (the format tests compare them) with less Python
per record for the common case of IPv4 born and store hosts: one
`pack_into` for the 88 fixed bytes, three slice copies for body, topic and
properties. Records with an IPv6 host go through the reference codec.

`peek_property` reads one property from an encoded property string without
decoding the whole map (the store needs only TAGS, KEYS and UNIQ_KEY of a
batch item).
"""

from __future__ import annotations

import struct
import zlib
from functools import lru_cache

from orbitmq.common.msgid import parse_host
from orbitmq.common.record import MAGIC_V1

#: Fixed part of a record with IPv4 born and store hosts (§5.1), up to the body length.
HEAD_V4 = struct.Struct(
    ">i"   # TOTALSIZE
    "i"    # MAGICCODE
    "i"    # BODYCRC
    "i"    # QUEUEID
    "i"    # FLAG
    "q"    # QUEUEOFFSET
    "q"    # PHYSICALOFFSET
    "i"    # SYSFLAG
    "q"    # BORNTIMESTAMP
    "4s"   # BORNHOST address
    "i"    # BORNHOST port
    "q"    # STORETIMESTAMP
    "4s"   # STOREHOST address
    "i"    # STOREHOST port
    "i"    # RECONSUMETIMES
    "q"    # PREPAREDTRANSACTIONOFFSET
    "i"    # BODY length
)
assert HEAD_V4.size == 88
_U16 = struct.Struct(">H")
_MAGIC = MAGIC_V1
_crc32 = zlib.crc32


@lru_cache(maxsize=4096)
def ipv4_host(addr: str) -> tuple[bytes, int] | None:
    """(address bytes, port) of an IPv4 ``ip:port``; None for IPv6 hosts."""
    host = parse_host(addr)
    return (host.ip, host.port) if len(host.ip) == 4 else None


@lru_cache(maxsize=1024)
def offset_id_prefix(store_host: str) -> str:
    """The first 16 (IPv4) or 40 (IPv6) hex digits of offset message ids from this store host
    (§5.11); the id is this plus the CommitLog offset as 16 uppercase hex digits."""
    host = parse_host(store_host)
    return (host.ip + host.port.to_bytes(4, "big", signed=True)).hex().upper()


@lru_cache(maxsize=4096)
def topic_block(topic: bytes) -> bytes:
    """The TOPIC field: one length byte, then the UTF-8 name."""
    return bytes((len(topic),)) + topic


def write_v4(
    buf: memoryview,
    pos: int,
    size: int,
    queue_id: int,
    flag: int,
    queue_offset: int,
    phys: int,
    sys_flag: int,
    born_ts: int,
    born: tuple[bytes, int],
    store_ts: int,
    store: tuple[bytes, int],
    reconsume_times: int,
    prepared_offset: int,
    body: bytes | bytearray | memoryview,
    topic_field: bytes,
    properties: bytes,
) -> None:
    """Write one record with IPv4 hosts at `buf[pos:]`; `size` must be its exact length."""
    body_len = len(body)
    HEAD_V4.pack_into(
        buf, pos, size, _MAGIC, _crc32(body) & 0x7FFFFFFF, queue_id, flag, queue_offset, phys, sys_flag,
        born_ts, born[0], born[1], store_ts, store[0], store[1], reconsume_times, prepared_offset, body_len,
    )
    p = pos + 88
    e = p + body_len
    buf[p:e] = body
    p = e + len(topic_field)
    buf[e:p] = topic_field
    props_len = len(properties)
    _U16.pack_into(buf, p, props_len)
    p += 2
    buf[p : p + props_len] = properties


def peek_property(raw: bytes, name_sep: bytes, sep_name_sep: bytes) -> str:
    """The value of one property in an encoded property string ("" when absent).

    `name_sep` is ``NAME\\x01`` and `sep_name_sep` ``\\x02NAME\\x01``. Like the
    Java decoder, a later duplicate wins and an empty value counts as absent.
    """
    i = raw.rfind(sep_name_sep)
    if i >= 0:
        start = i + len(sep_name_sep)
    elif raw.startswith(name_sep):
        start = len(name_sep)
    else:
        return ""
    end = raw.find(b"\x02", start)
    value = raw[start:] if end < 0 else raw[start:end]
    return value.decode("utf-8", "replace")
