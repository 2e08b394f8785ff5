"""Transactional messages on the broker: half messages, op records and the check service (§6.8)."""

from orbitmq.broker.transaction.messages import is_prepared, make_half
from orbitmq.broker.transaction.service import TransactionService

__all__ = ["TransactionService", "is_prepared", "make_half"]
