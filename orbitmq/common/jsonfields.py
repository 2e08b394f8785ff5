"""Typed reads of fields from parsed JSON objects (Java beans written by fastjson).

Java peers write numbers as numbers, but some SDKs and hand-edited config
files quote them, and fastjson accepts both; these readers do the same and
refuse anything else with a `JsonFieldError` (a ValueError) naming the field, so a malformed
body becomes a clear remark rather than Python's own exception text. A
missing field or a null takes the default, as fastjson leaves the bean's
default in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class JsonFieldError(ValueError):
    """A JSON value that is not the shape its field needs (the text names the field)."""


def json_object(value: object, what: str) -> Mapping[str, Any]:
    """`value` if it is a JSON object; ValueError naming `what` otherwise."""
    if not isinstance(value, Mapping):
        raise JsonFieldError(f"{what} is not a JSON object")
    return value


def get_name(obj: Mapping[str, Any], name: str, what: str) -> str:
    """A required, non-empty string field (a bean's name)."""
    value = obj.get(name)
    if not isinstance(value, str) or not value:
        raise JsonFieldError(f"{what} has no {name}: {value!r}")
    return value


def get_int(obj: Mapping[str, Any], name: str, default: int) -> int:
    value = obj.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise JsonFieldError(f"{name} is not an integer: {value!r}")
    try:
        return int(value)
    except ValueError:
        raise JsonFieldError(f"{name} is not an integer: {value!r}") from None


def get_float(obj: Mapping[str, Any], name: str, default: float) -> float:
    value = obj.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise JsonFieldError(f"{name} is not a number: {value!r}")
    try:
        return float(value)
    except ValueError:
        raise JsonFieldError(f"{name} is not a number: {value!r}") from None


def get_bool(obj: Mapping[str, Any], name: str, default: bool) -> bool:
    """true/false, also as strings ("true" in any case is true, as Boolean.parseBoolean reads it)."""
    value = obj.get(name)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.lower() == "true"
    if isinstance(value, int):
        return value != 0
    raise JsonFieldError(f"{name} is not a boolean: {value!r}")


def get_str(obj: Mapping[str, Any], name: str, default: str) -> str:
    value = obj.get(name)
    if value is None:
        return default
    if isinstance(value, (dict, list)):
        raise JsonFieldError(f"{name} is not a string: {value!r}")
    return str(value)
