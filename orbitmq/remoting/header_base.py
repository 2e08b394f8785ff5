"""The machinery behind typed custom headers (a command's extFields).

A header is a keyword-only, slotted dataclass deriving from `CommandHeader`.
Its fields use Python names; the wire name is the camelCase form unless the
class lists an exception in `WIRE_NAMES`. Field types say how values are
written and parsed, as Java's RemotingCommand does it by reflection:

* `str`, `int` (Java int, 32-bit), `Long` (Java long, 64-bit), `bool`, `float`;
* a field **without a default is required**: a missing key raises
  `HeaderError("the custom field <name> is null")`, Java's wording;
* a field defaulting to None is optional and left out of extFields while None;
  any other default (Java primitives such as `boolean unitMode = false`) is
  always written.

Parsing follows Java: integers are plain decimal strings in range, booleans
are "true" (any case) or anything else for false. A malformed number raises
`HeaderError`, which a server answers with SYSTEM_ERROR and the text as remark.

Every numeric field a server reads, typed header or not, goes through
`parse_int`/`parse_long` (`parse_field` picks by the field's wire name): the
one place where Java's `Integer.parseInt`/`Long.parseLong` rules are applied.
"""

from __future__ import annotations

import dataclasses
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Self

from orbitmq.errors import HeaderError

_LONG_MARK = "java.long"
#: A Java long field (64-bit); plain `int` fields are Java ints (32-bit).
Long = Annotated[int, _LONG_MARK]

_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[dDfF]?\Z")
#: Java's int and long ranges (inclusive bounds).
INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _integer_parser(wire: str, lo: int, hi: int) -> Callable[[str], int]:
    bits = 32 if hi == INT32[1] else 64

    def parse(raw: str) -> int:
        # Java's parseInt/parseLong: an optional sign, then ASCII digits. Python's int() alone
        # would also take " 1", "1_0" and other scripts' digits.
        digits = raw[1:] if raw[:1] in ("-", "+") else raw
        if digits.isascii() and digits.isdigit():
            value = int(raw)
            if lo <= value <= hi:
                return value
        raise HeaderError(f"the custom field <{wire}> must be a {bits}-bit integer, got {raw!r}")

    return parse


def parse_int(raw: str, wire: str) -> int:
    """A Java int field (32-bit) by `Integer.parseInt`'s rules; `HeaderError` naming `wire` otherwise."""
    if raw.isdigit() and raw.isascii() and len(raw) < 10:
        return int(raw)
    return _integer_parser(wire, *INT32)(raw)


def parse_long(raw: str, wire: str) -> int:
    """A Java long field (64-bit) by `Long.parseLong`'s rules; `HeaderError` naming `wire` otherwise."""
    if raw.isdigit() and raw.isascii() and len(raw) < 19:
        return int(raw)
    return _integer_parser(wire, *INT64)(raw)


def _float_parser(wire: str) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        if _FLOAT.match(raw.strip()):
            return float(raw.strip().rstrip("dDfF"))
        raise HeaderError(f"the custom field <{wire}> is not a number: {raw!r}")

    return parse


def _parse_bool(raw: str) -> bool:
    return raw.lower() == "true"  # Java's Boolean.parseBoolean


@dataclasses.dataclass(frozen=True, slots=True)
class _Field:
    attr: str
    wire: str
    required: bool
    default: Any
    kind: str  # "str", "int", "long", "bool" or "float"


def _build_spec(cls: type) -> tuple[_Field, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    overrides: Mapping[str, str] = getattr(cls, "WIRE_NAMES", {})
    spec = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
        if typing.get_origin(hint) is Annotated and _LONG_MARK in hint.__metadata__:
            kind = "long"
        elif hint in (int, bool, float, str):
            kind = hint.__name__
        else:
            raise TypeError(f"{cls.__name__}.{f.name}: unsupported header field type {hint!r}")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        default = None if f.default is dataclasses.MISSING else f.default
        spec.append(_Field(f.name, overrides.get(f.name, _camel(f.name)), required, default, kind))
    return tuple(spec)


_FORMAT = {"str": "{v}", "int": "str({v})", "long": "str({v})", "float": "repr({v})",
           "bool": "('true' if {v} else 'false')"}


_Parse = Callable[[Mapping[str, str] | None], Any]
_Format = Callable[[Any], dict[str, str]]


#: Decimal strings of small non-negative ints: most numeric fields (queue ids, flags, counts) are
#: one of these, and a dict hit is cheaper than checking and converting the digits.
_SMALL_INTS: dict[str | None, int] = {str(i): i for i in range(1024)}


def _compile(cls: type, compact: bool) -> tuple[_Parse, _Format]:
    """Generate straight-line parse and format functions for one header class.

    Headers are parsed on every send and pull, so the per-field loop of a
    generic implementation (~0.4 µs a field) is worth unrolling once per class;
    the parser fills the slots of a bare instance rather than calling the
    keyword-only `__init__`, which costs as much again as the fields.
    With `compact`, the keys are the class's `COMPACT_NAMES` instead.
    """
    spec = _build_spec(cls)
    compact_names: Mapping[str, str] = getattr(cls, "COMPACT_NAMES", {})
    keys = [compact_names[f.attr] if compact else f.wire for f in spec]
    usual: frozenset[str] = getattr(cls, "USUAL_FIELDS", frozenset())
    picked = [n for n, f in enumerate(spec) if f.attr in usual]
    env: dict[str, Any] = {
        "cls": cls, "HeaderError": HeaderError, "_bool": _parse_bool, "_EMPTY": {}, "_new": object.__new__,
        "_INTS": _SMALL_INTS, "_pick": operator.itemgetter(*(keys[n] for n in picked)) if len(picked) > 1 else None,
    }
    parse = ["def parse(fields):", "    get = fields.get if fields else _EMPTY.get", "    o = _new(cls)"]
    if len(picked) > 1:
        # The fields a request usually carries, fetched in one call; any of them missing: one by one.
        names = ", ".join(f"v{n}" for n in picked)
        parse.append("    try:")
        parse.append(f"        {names} = _pick(fields)")
        parse.append("    except (KeyError, TypeError):")
        parse.append(f"        {names} = {', '.join(f'get({keys[n]!r})' for n in picked)}")
    fmt = ["def format(self):", "    out = {}"]
    for n, (f, key) in enumerate(zip(spec, keys, strict=True)):
        var = f"v{n}"
        fetched = len(picked) > 1 and n in picked
        missing = f"raise HeaderError('the custom field <{f.wire}> is null')"
        env[f"d{n}"] = f.default
        fmt.append(f"    v = self.{f.attr}")
        fmt.append(f"    if v is not None: out[{key!r}] = {_FORMAT[f.kind].format(v='v')}")
        if f.kind == "str" and not f.required and f.default is None:
            parse.append(f"    o.{f.attr} = {var if fetched else f'get({key!r})'}")  # absent is None already
            continue
        if not fetched:
            parse.append(f"    {var} = get({key!r})")
        if f.kind in ("int", "long", "bool"):
            if f.kind == "bool":
                # Java's Boolean.parseBoolean; the usual spellings decided without a call.
                parse.append(f"    x = True if {var} == 'true' else False if {var} == 'false' else None")
                absent, convert = f"{var} is None", f"_bool({var})"
            else:
                env[f"p{n}"] = _integer_parser(f.wire, *(INT32 if f.kind == "int" else INT64))
                # Int fields mostly hold small numbers (queue ids, flags, counts); longs mostly do not.
                parse.append(f"    x = _INTS.get({var})" if f.kind == "int" else "    x = None")
                # An empty number counts as absent: Java's parse fails and leaves the field unset.
                # Plain digits short enough to be in range convert directly; the parser does the rest.
                absent, safe = f"not {var}", 10 if f.kind == "int" else 19
                convert = f"int({var}) if {var}.isdigit() and {var}.isascii() and len({var}) < {safe} else p{n}({var})"
            parse.append("    if x is None:")
            parse.append(f"        if {absent}: {missing if f.required else f'x = d{n}'}")
            parse.append(f"        else: x = {convert}")
            parse.append(f"    o.{f.attr} = x")
        elif f.kind == "float":
            env[f"p{n}"] = _float_parser(f.wire)
            if f.required:
                parse.append(f"    if {var} is None: {missing}")
                parse.append(f"    o.{f.attr} = p{n}({var})")
            else:
                parse.append(f"    o.{f.attr} = d{n} if {var} is None else p{n}({var})")
        elif f.required:
            parse.append(f"    if {var} is None: {missing}")
            parse.append(f"    o.{f.attr} = {var}")
        else:
            parse.append(f"    o.{f.attr} = d{n} if {var} is None else {var}")
    parse.append("    return o")
    fmt.append("    return out")
    # The generated text holds only identifiers and repr()s of wire names declared in this package.
    exec("\n".join(parse) + "\n\n" + "\n".join(fmt), env)  # noqa: S102
    return env["parse"], env["format"]


#: Compiled (parse, format) per class: under the field names, and under the compact keys.
_COMPILED: dict[type, tuple[_Parse, _Format]] = {}
_COMPILED_COMPACT: dict[type, tuple[_Parse, _Format]] = {}


def _codec(cls: type, compact: bool = False) -> tuple[_Parse, _Format]:
    table = _COMPILED_COMPACT if compact else _COMPILED
    codec = table.get(cls)
    if codec is None:
        codec = table[cls] = _compile(cls, compact)
    return codec


def parser(cls: type[_H], compact: bool = False) -> Callable[[Mapping[str, str] | None], _H]:
    """`cls.from_ext_fields` (or `from_compact_fields`) as a plain function, for hot paths."""
    parse: Callable[[Mapping[str, str] | None], _H] = _codec(cls, compact)[0]
    return parse


def _field_kinds() -> dict[str, str]:
    """Wire name -> "int" or "long" over every numeric field of every header class declared."""
    import orbitmq.remoting.headers  # noqa: F401 - declares every header class (it imports this module)

    kinds: dict[str, str] = {}
    pending: list[type] = [CommandHeader]
    while pending:
        sub: type
        for sub in pending.pop().__subclasses__():
            pending.append(sub)
            if dataclasses.is_dataclass(sub):
                kinds.update((f.wire, f.kind) for f in _build_spec(sub) if f.kind in ("int", "long"))
    return kinds


_KINDS: dict[str, str] = {}


def parse_field(raw: str, wire: str) -> int:
    """A numeric field read by hand: `parse_int` when a typed header declares `wire` a Java int,
    else `parse_long`."""
    if len(raw) < 10 and raw.isdigit() and raw.isascii():
        return int(raw)  # in range for either width
    if not _KINDS:
        _KINDS.update(_field_kinds())
    return parse_int(raw, wire) if _KINDS.get(wire) == "int" else parse_long(raw, wire)


class CommandHeader:
    """Base of typed headers: conversion to and from extFields under RocketMQ's names."""

    __slots__ = ()

    #: Python field name -> wire name, where the wire name is not the camelCase form.
    WIRE_NAMES: ClassVar[Mapping[str, str]] = {}
    #: Python field name -> key of the compact form (SendMessageRequestHeaderV2's letters), if any.
    COMPACT_NAMES: ClassVar[Mapping[str, str]] = {}
    #: Python names of the fields requests usually carry (hot headers only): the parser fetches
    #: them with one call and falls back to one lookup a field when any is missing.
    USUAL_FIELDS: ClassVar[frozenset[str]] = frozenset()

    def to_ext_fields(self) -> dict[str, str]:
        """The extFields map: every field whose value is not None, as a string."""
        return (_COMPILED.get(type(self)) or _codec(type(self)))[1](self)

    @classmethod
    def from_ext_fields(cls, fields: Mapping[str, str] | None) -> Self:
        """Parse an extFields map; unknown keys are ignored.

        Raises `HeaderError` naming the field when a required one is missing
        or a number is malformed.
        """
        result: Self = (_COMPILED.get(cls) or _codec(cls))[0](fields)
        return result

    def to_compact_fields(self) -> dict[str, str]:
        """`to_ext_fields` under the `COMPACT_NAMES` keys."""
        return (_COMPILED_COMPACT.get(type(self)) or _codec(type(self), True))[1](self)

    @classmethod
    def from_compact_fields(cls, fields: Mapping[str, str] | None) -> Self:
        """`from_ext_fields` for a map under the `COMPACT_NAMES` keys (errors name the long names)."""
        result: Self = (_COMPILED_COMPACT.get(cls) or _codec(cls, True))[0](fields)
        return result

    @classmethod
    def wire_names(cls) -> tuple[str, ...]:
        """The extFields keys this header knows, in declaration order."""
        return tuple(f.wire for f in _build_spec(cls))


_H = typing.TypeVar("_H", bound=CommandHeader)


@typing.dataclass_transform(kw_only_default=True)
def header(cls: type[_H]) -> type[_H]:
    """Class decorator: a keyword-only, slotted dataclass header.

    Not frozen: a frozen dataclass pays an `object.__setattr__` call per field,
    which doubles the cost of parsing a send header.
    """
    return dataclasses.dataclass(slots=True, kw_only=True)(cls)
