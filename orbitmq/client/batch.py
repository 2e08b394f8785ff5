"""Batch messages: encoding of `SEND_BATCH_MESSAGE` bodies (§5.8) and a splitter.

A batch body is the items back to back, each laid out as:

    >i  TOTALSIZE   20 + L + 2 + P
    >i  MAGICCODE   0 (the broker does not check it)
    >i  BODYCRC     0 (the broker computes it)
    >i  FLAG        message flag
    >i  L, then L body bytes
    >h  P, then P bytes of the item's property string
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence

from orbitmq.common.message import Message
from orbitmq.common.properties import MAX_PROPERTIES_BYTES, encode_properties_bytes
from orbitmq.errors import MessageValidationError

ITEM_HEAD = struct.Struct(">iiiii")  # TOTALSIZE MAGICCODE BODYCRC FLAG BODYLEN
PROPS_LEN = struct.Struct(">h")
ITEM_OVERHEAD = ITEM_HEAD.size + PROPS_LEN.size
#: What a batch may weigh: the producer's (and broker's) maxMessageSize.
MAX_BATCH_BYTES = 4 * 1024 * 1024


def encode_item(msg: Message) -> list[bytes]:
    """One batch item as buffers to be written back to back (the body is not copied)."""
    props = encode_properties_bytes(msg.properties)
    if len(props) > MAX_PROPERTIES_BYTES:
        raise MessageValidationError(f"the properties of a message exceed {MAX_PROPERTIES_BYTES} bytes")
    body = msg.body
    total = ITEM_OVERHEAD + len(body) + len(props)
    return [ITEM_HEAD.pack(total, 0, 0, msg.flag, len(body)), body, PROPS_LEN.pack(len(props)) + props]


def encode_batch(msgs: Iterable[Message]) -> list[bytes]:
    """The SEND_BATCH_MESSAGE body as a list of buffers."""
    out: list[bytes] = []
    for msg in msgs:
        out.extend(encode_item(msg))
    return out


def item_size(msg: Message) -> int:
    """The encoded size of one message as a batch item."""
    return ITEM_OVERHEAD + len(msg.body) + len(encode_properties_bytes(msg.properties))


def split_batches(msgs: Sequence[Message], limit: int = MAX_BATCH_BYTES) -> Iterator[list[Message]]:
    """Split `msgs` into consecutive batches whose encoded size stays within `limit`.

    Order is kept. A single message larger than `limit` cannot travel in any
    batch and raises `MessageValidationError`.
    """
    current: list[Message] = []
    size = 0
    for msg in msgs:
        n = item_size(msg)
        if n > limit:
            raise MessageValidationError(f"a message of {n} bytes exceeds the batch limit of {limit} bytes")
        if current and size + n > limit:
            yield current
            current, size = [], 0
        current.append(msg)
        size += n
    if current:
        yield current
