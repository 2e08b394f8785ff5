"""Columnar decoding of pull response bodies into the source's Arrow layout.

A pull body is stored records back to back (protocol reference 5.1/5.2). The
source decodes them straight into per-column lists and builds one Arrow
RecordBatch per few thousand rows, instead of building message objects
first: on a 1M-row read the per-row object is the cost that matters.

Record layout (IPv4 hosts; each host is 20 bytes instead of 8 when its IPv6
sysflag bit is set):

    0  TOTALSIZE       i     40 BORNTIMESTAMP   q
    4  MAGICCODE       i     48 BORNHOST        8|20
    8  BODYCRC         i     .. STORETIMESTAMP  q
    12 QUEUEID         i     .. STOREHOST       8|20
    16 FLAG            i     .. RECONSUMETIMES  i
    20 QUEUEOFFSET     q     .. PREPAREDTXOFF   q
    28 PHYSICALOFFSET  q     .. BODY            i + L
    36 SYSFLAG         i     .. TOPIC           1 + T (v1) or 2 + T (v2)
                             .. PROPERTIES      h + P
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from orbitmq.common.properties import RESERVED_NAMES, decode_properties
from orbitmq.common.record import MAGIC_V1, MAGIC_V2
from orbitmq.common.sysflag import BORNHOST_V6, COMPRESSED, COMPRESSION_TYPE_MASK, STOREHOST_V6
from orbitmq.errors import CorruptRecord

if TYPE_CHECKING:
    import pyarrow as pa

# The fields every record starts with, whatever its host kinds and magic.
_HEAD_FORMAT = (
    ">i"  # TOTALSIZE
    "i"   # MAGICCODE
    "4x"  # BODYCRC (the broker checked it on write)
    "i"   # QUEUEID
    "4x"  # FLAG
    "q"   # QUEUEOFFSET
    "q"   # PHYSICALOFFSET
    "i"   # SYSFLAG
    "q"   # BORNTIMESTAMP
)
_HEAD = struct.Struct(_HEAD_FORMAT)
# Every fixed field of a v1 record whose hosts are both IPv4, through the body length.
_FIXED_V1_V4 = struct.Struct(
    _HEAD_FORMAT +
    "8s"   # BORNHOST
    "q"    # STORETIMESTAMP
    "8s"   # STOREHOST
    "i"    # RECONSUMETIMES
    "8x"   # PREPAREDTRANSACTIONOFFSET
    "i"    # body length
)
_LONG = struct.Struct(">q")
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">H")
_RECONSUME_AND_TX = struct.Struct(">iqi")  # RECONSUMETIMES, PREPAREDTRANSACTIONOFFSET, body length

# The properties map holds user properties only: TAGS, KEYS and UNIQ_KEY have
# columns, and the other names RocketMQ reserves (WAIT, CLUSTER, ...) are
# broker and client bookkeeping that a writer could not send back anyway.
_COLUMN_PROPS = RESERVED_NAMES | {"TAGS", "KEYS", "UNIQ_KEY"}


def tag_filter(expression: str) -> Callable[[str | None], bool] | None:
    """The client-side re-check of a tag expression (`TagA || TagB`); None accepts all.

    The broker filters by tag hash code only, so collisions must be removed
    here (reference 5.2/5.10).
    """
    tags = {t.strip() for t in expression.split("||")}
    if not expression.strip() or "*" in tags:
        return None
    tags.discard("")
    return lambda tag: tag is not None and tag in tags


@dataclass
class Columns:
    """Rows decoded so far, one list per source column."""

    topic: list[str] = field(default_factory=list)
    queue_id: list[int] = field(default_factory=list)
    queue_offset: list[int] = field(default_factory=list)
    msg_id: list[str] = field(default_factory=list)
    tags: list[str | None] = field(default_factory=list)
    keys: list[str | None] = field(default_factory=list)
    prop_offsets: list[int] = field(default_factory=lambda: [0])
    prop_keys: list[str] = field(default_factory=list)
    prop_values: list[str] = field(default_factory=list)
    body: list[bytes] = field(default_factory=list)
    born_us: list[int] = field(default_factory=list)
    store_us: list[int] = field(default_factory=list)
    reconsume: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.queue_offset)

    def to_record_batch(self, broker_name: str, include_properties: bool) -> pa.RecordBatch:
        """Build the batch in exactly `schema.arrow_schema(include_properties)`."""
        import pyarrow as pa

        from orbitmq.spark.schema import arrow_schema

        n = len(self)
        ts = pa.timestamp("us", tz="UTC")
        cols: list[pa.Array] = [
            pa.array(self.topic, pa.string()),
            pa.array([broker_name] * n, pa.string()),
            pa.array(self.queue_id, pa.int32()),
            pa.array(self.queue_offset, pa.int64()),
            pa.array(self.msg_id, pa.string()),
            pa.array(self.tags, pa.string()),
            pa.array(self.keys, pa.string()),
        ]
        if include_properties:
            cols.append(pa.MapArray.from_arrays(
                pa.array(self.prop_offsets, pa.int32()),
                pa.array(self.prop_keys, pa.string()),
                pa.array(self.prop_values, pa.string()),
            ))
        cols += [
            pa.array(self.body, pa.binary()),
            pa.array(self.born_us, pa.int64()).cast(ts),
            pa.array(self.store_us, pa.int64()).cast(ts),
            pa.array(self.reconsume, pa.int32()),
        ]
        return pa.RecordBatch.from_arrays(cols, schema=arrow_schema(include_properties))


def _body(raw: bytes, sysflag: int) -> bytes:
    if not sysflag & COMPRESSED:
        return raw
    kind = (sysflag & COMPRESSION_TYPE_MASK) >> 8
    if kind in (0, 3):  # 0: producers before 4.9.4 set only the COMPRESSED bit, meaning zlib
        return zlib.decompress(raw)
    raise CorruptRecord(f"message body uses compression type {kind} (LZ4/ZSTD), which this reader cannot inflate")


def decode_into(
    cols: Columns,
    data: bytes | memoryview,
    *,
    end_offset: int,
    accept_tag: Callable[[str | None], bool] | None,
    include_properties: bool,
) -> tuple[int, int | None]:
    """Append the records of a pull body with queue offset < `end_offset` to `cols`.

    Returns (records seen, queue offset of the last record seen, or None if
    the body held none). Records at or past `end_offset` are not decoded: a
    pull may return more than the range asked for. A record that does not
    parse raises CorruptRecord rather than yielding a wrong row.
    """
    # This loop is the source's hot path (a few microseconds per row): one
    # struct unpack covers every fixed field of the common v1/IPv4 record,
    # list appends are bound once, and anything unusual takes _decode_slow.
    buf = memoryview(data)
    size = len(buf)
    pos = 0
    seen = 0
    last: int | None = None
    fixed = _FIXED_V1_V4
    fixed_size = fixed.size
    a_topic, a_qid, a_off = cols.topic.append, cols.queue_id.append, cols.queue_offset.append
    a_id, a_tags, a_keys, a_body = cols.msg_id.append, cols.tags.append, cols.keys.append, cols.body.append
    a_born, a_store, a_rec = cols.born_us.append, cols.store_us.append, cols.reconsume.append
    a_pk, a_pv, a_po = cols.prop_keys.append, cols.prop_values.append, cols.prop_offsets.append
    column_props = _COLUMN_PROPS
    while pos < size:
        if size - pos < fixed_size:
            raise CorruptRecord(f"truncated record header at byte {pos} of a {size}-byte pull body")
        (total, magic, queue_id, queue_offset, phys, sysflag, born, _bhost, store, shost, reconsume,
         body_len) = fixed.unpack_from(buf, pos)
        if total < fixed_size or pos + total > size or magic not in (MAGIC_V1, MAGIC_V2):
            raise CorruptRecord(f"bad record at byte {pos}: size {total}, magic {magic:#x}")
        if queue_offset >= end_offset:
            break
        seen += 1
        last = queue_offset
        if magic != MAGIC_V1 or sysflag & (BORNHOST_V6 | STOREHOST_V6):
            rec = _decode_slow(buf, pos, total)
            (topic, store, host, reconsume, body, raw_props) = rec
        else:
            p = pos + fixed_size
            body = bytes(buf[p:p + body_len])
            p += body_len
            topic_len = buf[p]
            topic = str(buf[p + 1:p + 1 + topic_len], "utf-8")
            p += 1 + topic_len
            props_len = buf[p] << 8 | buf[p + 1]
            if p + 2 + props_len > pos + total:
                raise CorruptRecord(f"record at byte {pos} overruns its size {total}")
            raw_props = bytes(buf[p + 2:p + 2 + props_len])
            host = shost
        pos += total
        props = decode_properties(raw_props) if raw_props else {}
        tag = props.get("TAGS")
        if accept_tag is not None and not accept_tag(tag):
            continue
        a_topic(topic)
        a_qid(queue_id)
        a_off(queue_offset)
        a_id(props.get("UNIQ_KEY") or (host + _LONG.pack(phys)).hex().upper())
        a_tags(tag)
        a_keys(props.get("KEYS"))
        if include_properties:
            for k, v in props.items():
                if k not in column_props:
                    a_pk(k)
                    a_pv(v)
            a_po(len(cols.prop_keys))
        a_body(_body(body, sysflag) if sysflag & COMPRESSED else body)
        a_born(born * 1000)
        a_store(store * 1000)
        a_rec(reconsume)
    return seen, last


def _decode_slow(buf: memoryview, pos: int, total: int) -> tuple[str, int, bytes, int, bytes, bytes]:
    """(topic, store time, store host bytes, reconsume times, body, raw properties) of any record layout."""
    magic = _INT.unpack_from(buf, pos + 4)[0]
    sysflag = _INT.unpack_from(buf, pos + 36)[0]
    p = pos + 48 + (20 if sysflag & BORNHOST_V6 else 8)
    (store,) = _LONG.unpack_from(buf, p)
    host_len = 20 if sysflag & STOREHOST_V6 else 8
    host = bytes(buf[p + 8:p + 8 + host_len])
    p += 8 + host_len
    reconsume, _tx, body_len = _RECONSUME_AND_TX.unpack_from(buf, p)
    p += 16
    body = bytes(buf[p:p + body_len])
    p += body_len
    if magic == MAGIC_V1:
        topic_len = buf[p]
        p += 1
    else:
        (topic_len,) = _SHORT.unpack_from(buf, p)
        p += 2
    topic = str(buf[p:p + topic_len], "utf-8")
    p += topic_len
    (props_len,) = _SHORT.unpack_from(buf, p)
    if p + 2 + props_len > pos + total:
        raise CorruptRecord(f"record at byte {pos} overruns its size {total}")
    return topic, store, host, reconsume, body, bytes(buf[p + 2:p + 2 + props_len])


def store_timestamps(data: bytes | memoryview) -> list[tuple[int, int]]:
    """(queue offset, store time in ms) of every record in a pull body, for time searches."""
    buf = memoryview(data)
    out: list[tuple[int, int]] = []
    pos = 0
    while pos + _HEAD.size <= len(buf):
        total, magic, _qid, queue_offset, _phys, sysflag, _born = _HEAD.unpack_from(buf, pos)
        if total < _HEAD.size or magic not in (MAGIC_V1, MAGIC_V2):
            raise CorruptRecord(f"bad record at byte {pos}: size {total}, magic {magic:#x}")
        (store,) = _LONG.unpack_from(buf, pos + 48 + (20 if sysflag & BORNHOST_V6 else 8))
        out.append((queue_offset, store))
        pos += total
    return out
