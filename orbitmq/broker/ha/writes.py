"""Internal writes obey the replication rule too.

Client sends wait for replicas in the send handler (`replica_wait`). What the
broker writes on its own — delayed and timer deliveries, the real message of a
committed transaction and its op record, messages sent back for retry — goes
through `ReplicatedWrites`, a view of the store whose puts return only once
the copies the rule asks for hold the record (or the slave timeout passed:
FLUSH_SLAVE_TIMEOUT, which still counts as stored). It waits only while this
broker is a master that waits for replicas (SYNC_MASTER, or controller mode),
checked at each put, so a promotion or demotion takes effect at once. A
controller-mode master with fewer in-sync copies than minInSyncReplicas refuses
such a put before the append (IN_SYNC_REPLICAS_NOT_ENOUGH, nothing stored), as
it refuses client sends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from orbitmq.common.message import MessageExtBatch, MessageExtBrokerInner
from orbitmq.store.api import MessageStore, PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from orbitmq.broker.ha.service import Replication


class ReplicatedWrites:
    """Wraps a `MessageStore`: the same reads, puts that wait for replicas (see the module docstring)."""

    def __init__(self, store: MessageStore, replication: Callable[[], Replication | None]) -> None:
        self._store = store
        #: The broker's replication of the moment (a role change may replace it).
        self._replication = replication

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        waits = msg.waits_for_store
        refused = self._refusal(waits)
        if refused is not None:
            return refused
        result = await self._store.put_message(msg)
        return await self._replicated(result, waits)

    async def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        refused = self._refusal(batch.wait_store)
        if refused is not None:
            return refused
        result = await self._store.put_messages(batch)
        return await self._replicated(result, batch.wait_store)

    def _refusal(self, waits: bool) -> PutMessageResult | None:
        """minInSyncReplicas, checked before the append as for client sends: nothing is stored."""
        replication = self._replication()
        if not waits or replication is None:
            return None
        return replication.put_refusal()

    async def _replicated(self, result: PutMessageResult, waits: bool) -> PutMessageResult:
        replication = self._replication()
        ar = result.append_result
        if (
            not waits or ar is None or result.status is not PutMessageStatus.PUT_OK or replication is None
            or replication.master is None or not replication.waits_for_replicas
        ):
            return result
        status = await replication.wait_for_slave(ar.wrote_offset + ar.wrote_bytes)
        if status is PutMessageStatus.PUT_OK:
            return result
        return PutMessageResult(status, ar, result.remark)

    def as_store(self) -> MessageStore:
        """This view typed as the store it wraps."""
        return cast(MessageStore, self)
