"""SQL92 message selectors, evaluated on message properties as RocketMQ's broker does.

The language is RocketMQ's subset of JMS selectors: comparisons (`=`, `<>`,
`>`, `>=`, `<`, `<=`), `[NOT] BETWEEN a AND b`, `[NOT] IN ('x', 'y')`,
`IS [NOT] NULL`, `AND`, `OR`, `NOT`, parentheses, integer and decimal numbers,
single-quoted strings (`''` escapes a quote), `TRUE`, `FALSE` and `NULL`.
Keywords are case-insensitive; property names are case-sensitive.

Semantics follow the Java broker, which compiles selectors with string
conversion switched on:

* Property values are strings. Compared with an integer literal a value is
  read as a Java long, with a decimal literal as a double; a value that does
  not parse makes the whole evaluation fail, and a failed evaluation is "no
  match" (the Java broker logs the exception and skips the message).
* Two strings compared with `<`, `>`, ... are both read as doubles.
* A missing property is NULL; a comparison with NULL is unknown, and logic is
  three-valued (`unknown AND false` is false, `NOT unknown` is unknown). Only
  a selector that evaluates to TRUE matches, so a missing property never
  matches a comparison, `<>` included. AND and OR evaluate left to right and
  stop when the left side decides, so a failing right side is then harmless.

`compile_sql92(text)` parses once (raising `SqlParseError` with the reason);
`Sql92Filter.matches(properties)` evaluates. The parser builds closures, so
evaluation does no tree walking or dispatch on node types. A chain of ANDs or
ORs becomes one closure over a list (a thousand-term OR costs no recursion),
and nesting (parentheses, NOT, unary signs) deeper than `MAX_NESTING` is
refused as a parse error, so neither parsing nor evaluation can exhaust
Python's stack.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from orbitmq.errors import OrbitMQError

Value = str | int | float | bool | None
Evaluator = Callable[[Mapping[str, str]], Value]

_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1

#: Deepest nesting of parentheses, NOT and unary signs a selector may use. Real selectors
#: nest a few levels; each level costs a few Python frames when parsing and evaluating.
MAX_NESTING = 64


class SqlParseError(OrbitMQError, ValueError):
    """A selector that is not valid SQL92 as RocketMQ accepts it."""


class _EvaluationError(Exception):
    """A value that cannot be converted for a comparison; the message does not match."""


# --- values as Java sees them ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Long:
    """An integer literal: Java `Long`, kept apart from doubles and booleans."""

    value: int


_JAVA_LONG = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(
    r"[+-]?(NaN|Infinity|((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?)[fFdD]?)"
)


def _to_long(text: str) -> int:
    if not _JAVA_LONG.fullmatch(text):
        raise _EvaluationError(f"not a long: {text!r}")
    value = int(text)
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise _EvaluationError(f"long out of range: {text!r}")
    return value


def _to_double(text: str) -> float:
    stripped = text.strip()  # Java's Double.valueOf ignores surrounding white space
    if not _JAVA_DOUBLE.fullmatch(stripped):
        raise _EvaluationError(f"not a double: {text!r}")
    return float(stripped.rstrip("fFdD").replace("Infinity", "inf"))


def _compare_doubles(a: float, b: float) -> int:
    # Double.compareTo: NaN equals itself and is above everything; -0.0 < 0.0.
    if math.isnan(a) or math.isnan(b):
        return 0 if math.isnan(a) and math.isnan(b) else (1 if math.isnan(a) else -1)
    if a == b:
        return (math.copysign(1, a) > math.copysign(1, b)) - (math.copysign(1, a) < math.copysign(1, b))
    return -1 if a < b else 1


def _compare(lv: object, rv: object) -> int | None:
    """Java's ComparisonExpression.__compare with string conversion on; None = incomparable (-1 in Java)."""
    if isinstance(lv, str) and isinstance(rv, str):
        return (lv > rv) - (lv < rv)
    if isinstance(lv, bool) or isinstance(rv, bool):
        if isinstance(lv, bool) and isinstance(rv, bool):
            return int(lv) - int(rv)
        if isinstance(lv, bool) and isinstance(rv, str):
            return int(lv) - int(rv.lower() == "true")
        if isinstance(rv, bool) and isinstance(lv, str):
            return int(lv.lower() == "true") - int(rv)
        return None
    # numbers, with a string converted to the other side's type
    if isinstance(lv, str):
        lv = _Long(_to_long(lv)) if isinstance(rv, _Long) else _to_double(lv)
    if isinstance(rv, str):
        rv = _Long(_to_long(rv)) if isinstance(lv, _Long) else _to_double(rv)
    if isinstance(lv, _Long) and isinstance(rv, _Long):
        return (lv.value > rv.value) - (lv.value < rv.value)
    a = float(lv.value) if isinstance(lv, _Long) else lv
    b = float(rv.value) if isinstance(rv, _Long) else rv
    assert isinstance(a, float) and isinstance(b, float)
    return _compare_doubles(a, b)


# --- tokens -------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<number>(?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?[lLfFdD]?)
  | (?P<ident>[A-Za-z_$][A-Za-z0-9_$.]*)
  | (?P<op><>|>=|<=|=|>|<|\(|\)|,|-|\+)
    """,
    re.VERBOSE,
)
_KEYWORDS = {"AND", "OR", "NOT", "BETWEEN", "IN", "IS", "NULL", "TRUE", "FALSE"}


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "string", "number", "ident", "kw", "op", "end"
    text: str
    pos: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SqlParseError(f"unexpected character {text[pos]!r} at position {pos} in: {_excerpt(text)}")
        kind = m.lastgroup
        assert kind is not None
        if kind != "ws":
            word = m.group()
            if kind == "ident" and word.upper() in _KEYWORDS:
                tokens.append(_Token("kw", word.upper(), pos))
            else:
                tokens.append(_Token(kind, word, pos))
        pos = m.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


# --- expressions ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Expr:
    """A parsed expression: its evaluator and what the parser must know about it."""

    fn: Evaluator
    kind: str  # "property", "constant", "boolean" (a predicate)
    constant: object = None  # the value when kind == "constant"


def _excerpt(text: str, limit: int = 256) -> str:
    """The selector as error remarks quote it: whole when short, its head otherwise."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _constant(value: object) -> _Expr:
    return _Expr(lambda _props: value, "constant", value)  # type: ignore[arg-type,return-value]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.fail(f"nesting deeper than {MAX_NESTING} levels")

    # token helpers
    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def accept(self, kind: str, text: str | None = None) -> bool:
        tok = self.peek()
        if tok.kind == kind and (text is None or tok.text == text):
            self.i += 1
            return True
        return False

    def expect(self, kind: str, text: str) -> None:
        if not self.accept(kind, text):
            self.fail(f"expected {text!r}")

    def fail(self, why: str) -> None:
        tok = self.peek()
        found = "end of expression" if tok.kind == "end" else repr(tok.text)
        raise SqlParseError(f"{why} at position {tok.pos}, found {found}, in: {_excerpt(self.text)}")

    # grammar: or_expr := and_expr (OR and_expr)*
    def parse(self) -> Evaluator:
        expr = self.or_expr()
        if self.peek().kind != "end":
            self.fail("unexpected token")
        return self.boolean(expr).fn

    def or_expr(self) -> _Expr:
        first = self.and_expr()
        terms = [first]
        while self.accept("kw", "OR"):
            terms.append(self.boolean(self.and_expr()))
        if len(terms) == 1:
            return first
        terms[0] = self.boolean(first)
        return _or(terms)

    def and_expr(self) -> _Expr:
        first = self.not_expr()
        terms = [first]
        while self.accept("kw", "AND"):
            terms.append(self.boolean(self.not_expr()))
        if len(terms) == 1:
            return first
        terms[0] = self.boolean(first)
        return _and(terms)

    def not_expr(self) -> _Expr:
        if self.accept("kw", "NOT"):
            self.nest()
            inner = _not(self.boolean(self.not_expr()))
            self.depth -= 1
            return inner
        return self.comparison()

    def boolean(self, expr: _Expr) -> _Expr:
        if expr.kind == "boolean":
            return expr
        if expr.kind == "constant" and isinstance(expr.constant, bool):
            return _Expr(expr.fn, "boolean")
        raise SqlParseError(f"a condition was expected where a value stands, in: {_excerpt(self.text)}")

    def comparison(self) -> _Expr:
        left = self.value()
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("=", "<>", ">", ">=", "<", "<="):
            self.take()
            right = self.value()
            return _comparison(tok.text, left, right, self.text)
        if tok.kind == "kw" and tok.text == "IS":
            self.take()
            negate = self.accept("kw", "NOT")
            self.expect("kw", "NULL")
            return _is_null(left, negate)
        negate = False
        if tok.kind == "kw" and tok.text == "NOT":
            nxt = self.tokens[self.i + 1]
            if nxt.kind == "kw" and nxt.text in ("BETWEEN", "IN"):
                self.take()
                negate = True
        if self.accept("kw", "BETWEEN"):
            low = self.value()
            self.expect("kw", "AND")
            high = self.value()
            return _between(left, low, high, negate, self.text)
        if self.accept("kw", "IN"):
            return _in(left, self.in_list(), negate, self.text)
        return left

    def in_list(self) -> frozenset[str]:
        self.expect("op", "(")
        items: set[str] = set()
        while True:
            tok = self.take()
            if tok.kind != "string":
                self.i -= 1
                self.fail("IN takes a list of quoted strings")
            items.add(_unquote(tok.text))
            if self.accept("op", ")"):
                return frozenset(items)
            self.expect("op", ",")

    def value(self) -> _Expr:
        tok = self.take()
        if tok.kind == "op" and tok.text == "(":
            self.nest()
            inner = self.or_expr()
            self.expect("op", ")")
            self.depth -= 1
            return inner
        if tok.kind == "op" and tok.text in ("-", "+"):
            self.nest()
            operand = self.value()
            self.depth -= 1
            if operand.kind != "constant" or not isinstance(operand.constant, (_Long, float)):
                self.i -= 1
                self.fail(f"unary {tok.text} applies to numbers only")
            if tok.text == "+":
                return operand
            c = operand.constant
            return _constant(_Long(-c.value) if isinstance(c, _Long) else -c)  # type: ignore[operator]
        if tok.kind == "string":
            return _constant(_unquote(tok.text))
        if tok.kind == "number":
            return _constant(_number(tok.text, self.text))
        if tok.kind == "kw" and tok.text in ("TRUE", "FALSE"):
            return _constant(tok.text == "TRUE")
        if tok.kind == "kw" and tok.text == "NULL":
            return _constant(None)
        if tok.kind == "ident":
            name = tok.text
            return _Expr(lambda props: props.get(name), "property")
        self.i -= 1
        self.fail("a value was expected")
        raise AssertionError("unreachable")


def _unquote(literal: str) -> str:
    return literal[1:-1].replace("''", "'")


def _number(text: str, source: str) -> object:
    if re.fullmatch(r"\d+[lL]?", text):
        value = int(text.rstrip("lL"))
        if value > _LONG_MAX + 1:  # the sign comes later; -9223372036854775808 is legal
            raise SqlParseError(f"integer {text} is out of the long range, in: {_excerpt(source)}")
        return _Long(value)
    return float(text.rstrip("fFdD"))


# --- node builders (each returns closures over the operand evaluators) ---------------


def _check_orderable(expr: _Expr, source: str) -> None:
    if expr.kind == "boolean" or (
        expr.kind == "constant" and not isinstance(expr.constant, (_Long, float))
    ):
        raise SqlParseError(f"value {_show(expr)} cannot be compared with <, >, <=, >= or BETWEEN, in: {_excerpt(source)}")


def _show(expr: _Expr) -> str:
    c = expr.constant
    if isinstance(c, _Long):
        return str(c.value)
    if isinstance(c, str):
        return "'" + c + "'"
    return "NULL" if c is None and expr.kind == "constant" else str(c)


def _comparison(op: str, left: _Expr, right: _Expr, source: str) -> _Expr:
    if op in ("=", "<>"):
        for side in (left, right):
            if side.kind == "constant" and side.constant is None:
                raise SqlParseError(f"NULL cannot be compared with {op}; use IS NULL, in: {_excerpt(source)}")
        equal = _equality(left.fn, right.fn)
        return equal if op == "=" else _not(equal)
    _check_orderable(left, source)
    _check_orderable(right, source)
    test: Callable[[int], bool] = {
        ">": lambda c: c > 0,
        ">=": lambda c: c >= 0,
        "<": lambda c: c < 0,
        "<=": lambda c: c <= 0,
    }[op]
    lf, rf = left.fn, right.fn

    def ordered(props: Mapping[str, str]) -> Value:
        lv = lf(props)
        if lv is None:
            return None
        rv = rf(props)
        if rv is None:
            return None
        if isinstance(lv, str) and isinstance(rv, str):
            # two strings are only ordered as numbers
            c = _compare_doubles(_to_double(lv), _to_double(rv))
        else:
            cmp = _compare(lv, rv)
            c = -1 if cmp is None else cmp  # Java answers -1 for values it cannot order
        return test(c)

    return _Expr(ordered, "boolean")


def _equality(lf: Evaluator, rf: Evaluator) -> _Expr:
    def equal(props: Mapping[str, str]) -> Value:
        lv = lf(props)
        rv = rf(props)
        # Java: NULL = x is unknown, x = NULL is false, NULL = NULL is true (IS NULL).
        if lv is None:
            return True if rv is None else None
        if rv is None:
            return False
        if lv == rv and type(lv) is type(rv):
            return True
        c = _compare(lv, rv)
        return c == 0

    return _Expr(equal, "boolean")


def _is_null(operand: _Expr, negate: bool) -> _Expr:
    f = operand.fn
    if negate:
        return _Expr(lambda props: f(props) is not None, "boolean")
    return _Expr(lambda props: f(props) is None, "boolean")


def _between(value: _Expr, low: _Expr, high: _Expr, negate: bool, source: str) -> _Expr:
    for side in (value, low, high):
        _check_orderable(side, source)
    if low.kind == "constant" and high.kind == "constant":
        c = _compare(low.constant, high.constant)
        if c is not None and c > 0:
            raise SqlParseError(
                f"BETWEEN needs the low value ({_show(low)}) not above the high value ({_show(high)}), in: {_excerpt(source)}"
            )
    if negate:
        return _or([_comparison("<", value, low, source), _comparison(">", value, high, source)])
    return _and([_comparison(">=", value, low, source), _comparison("<=", value, high, source)])


def _in(value: _Expr, items: frozenset[str], negate: bool, source: str) -> _Expr:
    if value.kind != "property":
        raise SqlParseError(f"IN applies to a property, in: {_excerpt(source)}")
    f = value.fn

    def member(props: Mapping[str, str]) -> Value:
        v = f(props)
        if not isinstance(v, str):
            return None
        return (v in items) != negate

    return _Expr(member, "boolean")


def _chain(terms: list[_Expr], decisive: bool) -> _Expr:
    """AND (`decisive` False) or OR (True) of `terms`, left to right: the decisive value ends the
    evaluation at once; otherwise any unknown operand makes the result unknown."""
    fns = tuple(t.fn for t in terms)
    otherwise = not decisive

    def chain(props: Mapping[str, str]) -> Value:
        unknown = False
        for fn in fns:
            v = fn(props)
            if v is decisive:
                return decisive
            if v is None:
                unknown = True
        return None if unknown else otherwise

    return _Expr(chain, "boolean")


def _and(terms: list[_Expr]) -> _Expr:
    return _chain(terms, False)


def _or(terms: list[_Expr]) -> _Expr:
    return _chain(terms, True)


def _not(operand: _Expr) -> _Expr:
    f = operand.fn

    def negation(props: Mapping[str, str]) -> Value:
        v = f(props)
        return None if v is None else not v

    return _Expr(negation, "boolean")


# --- public API -----------------------------------------------------------------------


class Sql92Filter:
    """A compiled selector. `matches` is safe to call from any thread; it never raises."""

    __slots__ = ("_fn", "expression")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        self._fn = _Parser(expression).parse()

    def matches(self, properties: Mapping[str, str]) -> bool:
        """True when the selector evaluates to TRUE on these properties."""
        try:
            return self._fn(properties) is True
        except _EvaluationError:
            return False

    def __repr__(self) -> str:
        return f"Sql92Filter({self.expression!r})"


def compile_sql92(expression: str) -> Sql92Filter:
    """Parse a selector; raises SqlParseError saying what is wrong and where."""
    if not expression or not expression.strip():
        raise SqlParseError("SQL92 expression is empty")
    return Sql92Filter(expression)
