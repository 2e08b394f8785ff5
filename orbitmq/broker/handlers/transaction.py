"""END_TRANSACTION (37): a producer commits or rolls back a half message (§3.6).

Producers send it oneway, so most answers are never read; a request sent
with a response expected gets RocketMQ's codes and remarks. A slave answers
SLAVE_NOT_AVAILABLE; an unknown state (0) is logged and changes nothing.
"""

from __future__ import annotations

import logging

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.handlers.fields import Registry, boolean, group_field, integer
from orbitmq.broker.transaction import TransactionService
from orbitmq.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_ROLLBACK_TYPE
from orbitmq.errors import SlaveNotAvailable, SystemError_
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer

log = logging.getLogger("orbitmq.broker.transaction")

_KINDS = {TRANSACTION_NOT_TYPE: "unknown", TRANSACTION_COMMIT_TYPE: "commit", TRANSACTION_ROLLBACK_TYPE: "rollback"}


class TransactionHandlers:
    def __init__(self, *, live: LiveConfig, service: TransactionService) -> None:
        self.live = live
        self.service = service

    def register(self, server: Registry) -> None:
        server.register(RequestCode.END_TRANSACTION, self.end_transaction)

    async def end_transaction(self, request: RemotingCommand, peer: Peer) -> RemotingCommand | None:
        if self.live.value.broker_id != 0:
            raise SlaveNotAvailable("Message store is not available now (slave).")
        group = group_field(request, "producerGroup")
        table_offset = integer(request, "tranStateTableOffset")
        commit_log_offset = integer(request, "commitLogOffset")
        kind = integer(request, "commitOrRollback")
        from_check = boolean(request, "fromTransactionCheck")
        if kind not in _KINDS:
            raise SystemError_(f"commitOrRollback {kind} is not 0, 8 or 12")
        if kind == TRANSACTION_NOT_TYPE:
            log.info("producer %s (%s) left transaction %s unknown%s%s", group, peer.addr, request.field("msgId"),
                     " after a check" if from_check else "", f": {request.remark}" if request.remark else "")
            return None
        outcome = await self.service.end(
            group=group, table_offset=table_offset, commit_log_offset=commit_log_offset, kind=kind,
            from_check=from_check,
        )
        if outcome.code != ResponseCode.SUCCESS:
            log.warning("%s of transaction %s from %s refused: %s", _KINDS[kind], request.field("msgId"),
                        peer.addr, outcome.remark)
        if request.is_oneway:
            return None
        return request.response(outcome.code, outcome.remark)
