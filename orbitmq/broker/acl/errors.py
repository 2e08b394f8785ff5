"""The ACL refusal. Kept here (not in orbitmq/errors.py) because only the broker's ACL raises it."""

from __future__ import annotations

from orbitmq.errors import OrbitMQError


class AclError(OrbitMQError):
    """A request failed the ACL check, or an ACL setting is malformed; the text is the remark."""
