"""CHECK_TRANSACTION_STATE on the client: route a broker's question to the producer of the group.

The broker sends the half message (store encoding, real topic restored) as
the body; its PGROUP property names the producer group. The answer itself
(END_TRANSACTION with fromTransactionCheck=true) is the producer's business
(`TransactionProducer.on_check`). Kept apart from the producer module so the
client instance can register the handler without importing producers.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.common.record import iter_records
from orbitmq.errors import CorruptRecord
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer

log = logging.getLogger(__name__)


@runtime_checkable
class CheckAnswerer(Protocol):
    """A producer that can answer transaction checks."""

    def on_check(self, fields: Mapping[str, str], msg: MessageExt, peer: Peer) -> None: ...


async def on_check_transaction_state(
    producers: Mapping[str, Any], request: RemotingCommand, peer: Peer
) -> RemotingCommand | None:
    """Hand the check to the group's producer; a check nobody here can answer is logged and dropped."""
    try:
        msgs = list(iter_records(request.body_bytes()))
    except (CorruptRecord, ValueError) as exc:
        log.warning("CHECK_TRANSACTION_STATE from %s with an unreadable body: %s", peer.addr, exc)
        return None
    if not msgs:
        log.warning("CHECK_TRANSACTION_STATE from %s without a message", peer.addr)
        return None
    msg = msgs[0]
    group = msg.properties.get(mc.PRODUCER_GROUP, "")
    producer = producers.get(group)
    if not isinstance(producer, CheckAnswerer):
        log.warning("broker %s checks transaction %s of group %r, which has no transaction producer here",
                    peer.addr, msg.unique_key, group)
        return None
    producer.on_check(request.ext_fields or {}, msg, peer)
    return None
