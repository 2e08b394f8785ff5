"""whiteRemoteAddress / globalWhiteRemoteAddresses patterns, as RocketMQ 4.x reads them.

Forms (IPv4; an IPv6 address is matched exactly):

* blank — matches nothing; `*`, `*.*.*.*` — matches every address;
* `192.168.0.{1,2,3}` — the listed last parts;
* `10.0.0.1,10.0.0.2` — any of the listed addresses;
* `192.168.1.*`, `192.168.*`, `192.168.1.1-10`, `10.1-5.*` — per part a number,
  a `lo-hi` range or `*`; missing trailing parts mean `*`;
* anything else — that one address.
"""

from __future__ import annotations

from collections.abc import Callable

from orbitmq.broker.acl.errors import AclError

Matcher = Callable[[str], bool]


def _part_matcher(part: str, pattern: str) -> Callable[[int], bool]:
    if part == "*":
        return lambda n: True
    lo_text, dash, hi_text = part.partition("-")
    try:
        lo = int(lo_text)
        hi = int(hi_text) if dash else lo
    except ValueError:
        raise AclError(f"whiteRemoteAddress {pattern!r}: {part!r} is not a number, range or *") from None
    if not (0 <= lo <= hi <= 255):
        raise AclError(f"whiteRemoteAddress {pattern!r}: {part!r} is outside 0-255")
    return lambda n: lo <= n <= hi


def _ipv4_parts(addr: str) -> list[int] | None:
    parts = addr.split(".")
    if len(parts) != 4 or not all(p.isascii() and p.isdigit() and int(p) <= 255 for p in parts):
        return None
    return [int(p) for p in parts]


def _range_matcher(pattern: str) -> Matcher:
    parts = pattern.split(".")
    if len(parts) > 4:
        raise AclError(f"whiteRemoteAddress {pattern!r} has more than four parts")
    checks = [_part_matcher(p.strip(), pattern) for p in parts]

    def match(addr: str) -> bool:
        nums = _ipv4_parts(addr)
        return nums is not None and all(check(n) for check, n in zip(checks, nums, strict=False))

    return match


def _one(pattern: str) -> Matcher:
    pattern = pattern.strip()
    if "*" in pattern or ("-" in pattern and ":" not in pattern):
        return _range_matcher(pattern)
    if ":" not in pattern and _ipv4_parts(pattern) is None:
        raise AclError(f"whiteRemoteAddress {pattern!r} is not an IP address or pattern")
    return lambda addr: addr == pattern


def compile_address(pattern: str | None) -> Matcher:
    """A predicate over a peer's host (`"127.0.0.1"`); raises `AclError` for a malformed pattern."""
    text = (pattern or "").strip()
    if not text:
        return lambda addr: False
    if text in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return lambda addr: True
    if text.endswith("}"):
        head, brace, tail = text.partition("{")
        if not brace or not head.endswith((".", ":")):
            raise AclError(f"whiteRemoteAddress {text!r}: expected a prefix then {{a,b,...}}")
        items = [head + item.strip() for item in tail[:-1].split(",") if item.strip()]
        matchers = [_one(item) for item in items]
    elif "," in text:
        matchers = [_one(item) for item in text.split(",") if item.strip()]
    else:
        return _one(text)
    return lambda addr: any(m(addr) for m in matchers)


def compile_addresses(patterns: list[str]) -> Matcher:
    """Any-of over several patterns (globalWhiteRemoteAddresses)."""
    matchers = [compile_address(p) for p in patterns]
    return lambda addr: any(m(addr) for m in matchers)
