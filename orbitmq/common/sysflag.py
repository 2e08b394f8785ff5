"""The message sysflag bits (RocketMQ's MessageSysFlag, protocol reference §5.3).

They travel in the send header's `sysFlag` and in every stored record's
SYSFLAG, so the producer, the broker, the store and the record codec all
read them from here.
"""

from __future__ import annotations

from typing import Final

COMPRESSED: Final = 0x1
MULTI_TAGS: Final = 0x2
TRANSACTION_NOT_TYPE: Final = 0x0
TRANSACTION_PREPARED_TYPE: Final = 0x4
TRANSACTION_COMMIT_TYPE: Final = 0x8
TRANSACTION_ROLLBACK_TYPE: Final = 0xC
TRANSACTION_TYPE_MASK: Final = 0xC
BORNHOST_V6: Final = 0x10
STOREHOST_V6: Final = 0x20
#: Both host bits: which of the record's hosts are IPv6.
HOST_V6_BITS: Final = BORNHOST_V6 | STOREHOST_V6
NEED_UNWRAP: Final = 0x40
INNER_BATCH: Final = 0x80
COMPRESSION_TYPE_MASK: Final = 0x700
COMPRESSION_LZ4: Final = 0x100
COMPRESSION_ZSTD: Final = 0x200
COMPRESSION_ZLIB: Final = 0x300
