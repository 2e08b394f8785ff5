"""Plain ACL permission bits and the checks RocketMQ 4.x makes with them.

Bits as RocketMQ has them: DENY 1, ANY 2, PUB 4, SUB 8. A resource string
in plain_acl.yml is `name=PERM` with PERM one of DENY, PUB, SUB, PUB|SUB,
SUB|PUB.
"""

from __future__ import annotations

from orbitmq.broker.acl.errors import AclError

DENY = 1
ANY = 2
PUB = 4
SUB = 8

_NAMES: dict[str, int] = {"DENY": DENY, "PUB": PUB, "SUB": SUB, "PUB|SUB": PUB | SUB, "SUB|PUB": PUB | SUB}

def parse_perm(text: str | None) -> int:
    """RocketMQ's reading: an unknown or missing word means DENY."""
    if text is None:
        return DENY
    return _NAMES.get(str(text).strip(), DENY)


def check_perm_word(text: str, resource: str) -> None:
    """Raise `AclError` unless `text` is one of the five permission words."""
    if str(text).strip() not in _NAMES:
        raise AclError(
            f"Parse resource permission error for {resource}. "
            "The expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB' or 'DENY'."
        )


def split_resource(item: str) -> tuple[str, str]:
    """`"topicA=PUB"` -> ("topicA", "PUB"); raises `AclError` for any other shape."""
    name, sep, perm = str(item).partition("=")
    if not sep or not name.strip() or not perm.strip() or "=" in perm:
        raise AclError(
            f"Parse Resource format error for {item}. "
            "The expected resource format is 'Res=Perm'. For example: topicA=SUB"
        )
    check_perm_word(perm, str(item))
    return name.strip(), perm.strip()


def allows(needed: int, owned: int) -> bool:
    """True when `owned` grants `needed` (DENY in `owned` grants nothing)."""
    if owned & DENY:
        return False
    if needed & ANY:
        return bool(owned & (PUB | SUB))
    return bool(needed & owned)
