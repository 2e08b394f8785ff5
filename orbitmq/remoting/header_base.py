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
"""

from __future__ import annotations

import dataclasses
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
_INT_RANGE = (-(1 << 31), (1 << 31) - 1)
_LONG_RANGE = (-(1 << 63), (1 << 63) - 1)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _integer_parser(wire: str, lo: int, hi: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        # str.isdigit on ASCII text accepts exactly 0-9; int() alone would also take " 1" and "1_0".
        digits = raw[1:] if raw[:1] in ("-", "+") else raw
        if digits.isascii() and digits.isdigit():
            value = int(raw)
            if lo <= value <= hi:
                return value
        raise HeaderError(f"the custom field <{wire}> is not a number in [{lo}, {hi}]: {raw!r}")

    return parse


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


def _compile(cls: type) -> tuple[Callable[[Mapping[str, str] | None], Any], Callable[[Any], dict[str, str]]]:
    """Generate straight-line parse and format functions for one header class.

    Headers are parsed on every send and pull, so the per-field loop of a
    generic implementation (~0.4 µs a field) is worth unrolling once per class.
    """
    spec = _build_spec(cls)
    env: dict[str, Any] = {"cls": cls, "HeaderError": HeaderError, "_bool": _parse_bool}
    parse = ["def parse(fields):", "    get = fields.get if fields else _EMPTY.get"]
    fmt = ["def format(self):", "    out = {}"]
    env["_EMPTY"] = {}
    for n, f in enumerate(spec):
        var = f"v{n}"
        if f.kind in ("int", "long"):
            env[f"p{n}"] = _integer_parser(f.wire, *(_INT_RANGE if f.kind == "int" else _LONG_RANGE))
            convert = f"p{n}({var})"
        elif f.kind == "float":
            env[f"p{n}"] = _float_parser(f.wire)
            convert = f"p{n}({var})"
        elif f.kind == "bool":
            convert = f"_bool({var})"
        else:
            convert = var
        parse.append(f"    {var} = get({f.wire!r})")
        if f.kind in ("int", "long"):
            # Fast path for plain digits short enough to be in range; the parser handles the rest.
            safe = 10 if f.kind == "int" else 19
            fast = f"int({var}) if {var}.isdigit() and {var}.isascii() and len({var}) < {safe} else p{n}({var})"
            convert = f"({fast})"
        if f.required:
            parse.append(f"    if {var} is None: raise HeaderError('the custom field <{f.wire}> is null')")
            if convert != var:
                parse.append(f"    {var} = {convert}")
        else:
            env[f"d{n}"] = f.default
            parse.append(f"    {var} = d{n} if {var} is None else {convert}")
        fmt.append(f"    v = self.{f.attr}")
        fmt.append(f"    if v is not None: out[{f.wire!r}] = {_FORMAT[f.kind].format(v='v')}")
    args = ", ".join(f"{f.attr}=v{n}" for n, f in enumerate(spec))
    parse.append(f"    return cls({args})")
    fmt.append("    return out")
    # The generated text holds only identifiers and repr()s of wire names declared in this package.
    exec("\n".join(parse) + "\n\n" + "\n".join(fmt), env)  # noqa: S102
    return env["parse"], env["format"]


_COMPILED: dict[type, tuple[Callable[[Mapping[str, str] | None], Any], Callable[[Any], dict[str, str]]]] = {}


def _codec(cls: type) -> tuple[Callable[[Mapping[str, str] | None], Any], Callable[[Any], dict[str, str]]]:
    codec = _COMPILED.get(cls)
    if codec is None:
        codec = _COMPILED[cls] = _compile(cls)
    return codec


class CommandHeader:
    """Base of typed headers: conversion to and from extFields under RocketMQ's names."""

    __slots__ = ()

    #: Python field name -> wire name, where the wire name is not the camelCase form.
    WIRE_NAMES: ClassVar[Mapping[str, str]] = {}

    def to_ext_fields(self) -> dict[str, str]:
        """The extFields map: every field whose value is not None, as a string."""
        return _codec(type(self))[1](self)

    @classmethod
    def from_ext_fields(cls, fields: Mapping[str, str] | None) -> Self:
        """Parse an extFields map; unknown keys are ignored.

        Raises `HeaderError` naming the field when a required one is missing
        or a number is malformed.
        """
        result: Self = _codec(cls)[0](fields)
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
