"""The ACL refusal. Kept here (not in orbitmq/errors.py) because only the ACL checks raise it."""

from __future__ import annotations

from orbitmq.errors import OrbitMQError
from orbitmq.remoting.codes import ResponseCode


class AclError(OrbitMQError):
    """A request failed the ACL check, or an ACL setting is malformed; the text is the remark.

    `code` is what the request is answered with: SYSTEM_ERROR for the checks
    RocketMQ 4.x makes (its clients see the answer they know), NO_PERMISSION
    (RocketMQ 5's answer) for the checks OrbitMQ adds: stored messages' topics,
    offset rewrites, signature version 2, replays, addresses.
    """

    def __init__(self, message: str, *, no_permission: bool = False) -> None:
        super().__init__(message)
        self.code = int(ResponseCode.NO_PERMISSION if no_permission else ResponseCode.SYSTEM_ERROR)
