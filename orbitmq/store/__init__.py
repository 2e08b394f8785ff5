"""The message store: CommitLog, ConsumeQueues, IndexFile, flushing, recovery and cleaning.

`DefaultMessageStore` (files) and `MemoryMessageStore` (memory) implement the
`MessageStore` protocol of `api.py`.
"""

from orbitmq.store.api import (
    GetMessageResult,
    GetMessageStatus,
    MessageFilter,
    MessageStore,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
    SelectMappedBufferResult,
)
from orbitmq.store.config import BrokerRole, FlushDiskType, StoreConfig
from orbitmq.store.memory import MemoryMessageStore
from orbitmq.store.store import DefaultMessageStore

__all__ = [
    "BrokerRole",
    "DefaultMessageStore",
    "FlushDiskType",
    "GetMessageResult",
    "GetMessageStatus",
    "MemoryMessageStore",
    "MessageFilter",
    "MessageStore",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "SelectMappedBufferResult",
    "StoreConfig",
]
