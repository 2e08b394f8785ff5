"""SQL92 selectors: parse errors, RocketMQ's conversion rules, and a reference evaluator."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.filter.sql92 import SqlParseError, compile_sql92


def matches(expr: str, props: Mapping[str, str]) -> bool:
    return compile_sql92(expr).matches(props)


# --- behaviour as RocketMQ documents it ---------------------------------------------


def test_the_documented_example_selects_tags_and_a_numeric_range() -> None:
    expr = "(TAGS is not null and TAGS in ('TagA', 'TagB')) and (a is not null and a between 0 and 3)"
    assert matches(expr, {"TAGS": "TagA", "a": "3"})
    assert not matches(expr, {"TAGS": "TagA", "a": "4"})
    assert not matches(expr, {"TAGS": "TagC", "a": "1"})
    assert not matches(expr, {"TAGS": "TagB"})


def test_string_properties_compare_as_numbers_against_number_literals() -> None:
    assert matches("a > 5", {"a": "10"})
    assert matches("a = 10", {"a": "10"})
    assert matches("a >= 1.5", {"a": "1.5"})
    assert matches("a < -1", {"a": "-2"})


def test_a_value_that_is_not_a_number_never_matches_a_numeric_comparison() -> None:
    assert not matches("a > 5", {"a": "ten"})
    assert not matches("a = 5", {"a": "ten"})
    # A decimal value against an integer literal fails like Java's Long.valueOf("2.5").
    assert not matches("a > 2", {"a": "2.5"})
    # The failure spoils the whole evaluation, as in the Java broker.
    assert not matches("a > 5 OR b = 'x'", {"a": "ten", "b": "x"})


def test_a_missing_property_makes_every_comparison_false() -> None:
    for expr in ("a = 1", "a <> 1", "a > 1", "a < 1", "a BETWEEN 1 AND 2", "a IN ('x')", "a NOT IN ('x')",
                 "NOT (a = 1)", "a = 'x'"):
        assert not matches(expr, {}), expr
    assert matches("a IS NULL", {})
    assert not matches("a IS NOT NULL", {})


def test_three_valued_logic_lets_a_known_side_decide() -> None:
    assert matches("missing = 1 OR b = 'x'", {"b": "x"})
    assert not matches("missing = 1 AND b = 'x'", {"b": "x"})
    assert matches("NOT (missing = 1 AND b = 'y')", {"b": "x"})


def test_keywords_are_case_insensitive_and_quotes_escape_by_doubling() -> None:
    assert matches("a is not null and b in ('it''s')", {"a": "1", "b": "it's"})
    assert matches("TRUE", {})
    assert not matches("FALSE", {})
    assert matches("flag = TRUE", {"flag": "true"})
    assert matches("a not between 1 and 2", {"a": "3"})


@pytest.mark.parametrize(
    "expr",
    ["", "   ", "a >", "a = NULL", "NULL <> a", "a > 'x'", "a between 3 and 1", "a", "a in (1, 2)",
     "a in ()", "(a = 1", "a = 1)", "a == 1", "a ! 1", "1 + 1 = 2", "a = -'x'", "a > TRUE"],
)
def test_invalid_selectors_are_refused_with_the_reason(expr: str) -> None:
    with pytest.raises(SqlParseError) as info:
        compile_sql92(expr)
    assert str(info.value)


# --- property-based comparison with a reference evaluator ------------------------------
#
# Expressions are generated as trees, rendered to text, and evaluated here by a plain
# tree walk written from the rules in the module docstring (not from its code).

Tree = tuple | str
NAMES = ["a", "b", "c"]

ints = st.integers(min_value=-50, max_value=50)
prop_values = st.one_of(
    ints.map(str), st.sampled_from(["x", "y", "1.5", "-0.5", "", "abc"])
)
properties = st.dictionaries(st.sampled_from(NAMES), prop_values, max_size=3)


def leaf() -> st.SearchStrategy[Tree]:
    name = st.sampled_from(NAMES)
    return st.one_of(
        st.tuples(st.just("cmp"), name, st.sampled_from(["=", "<>", ">", ">=", "<", "<="]), ints),
        st.tuples(st.just("eqs"), name, st.sampled_from(["=", "<>"]), st.sampled_from(["x", "y", "1.5"])),
        st.tuples(st.just("between"), name, st.booleans(), ints, ints).map(
            lambda t: (t[0], t[1], t[2], min(t[3], t[4]), max(t[3], t[4]))
        ),
        st.tuples(st.just("in"), name, st.booleans(), st.lists(st.sampled_from(["x", "y", "1"]), min_size=1, max_size=3)),
        st.tuples(st.just("isnull"), name, st.booleans()),
    )


trees = st.recursive(
    leaf(),
    lambda children: st.one_of(
        st.tuples(st.just("and"), children, children),
        st.tuples(st.just("or"), children, children),
        st.tuples(st.just("not"), children),
    ),
    max_leaves=8,
)


def render(t: Tree) -> str:
    kind = t[0]
    if kind == "cmp":
        return f"{t[1]} {t[2]} {t[3]}"
    if kind == "eqs":
        return f"{t[1]} {t[2]} '{t[3]}'"
    if kind == "between":
        return f"{t[1]} {'NOT ' if t[2] else ''}BETWEEN {t[3]} AND {t[4]}"
    if kind == "in":
        return f"{t[1]} {'NOT ' if t[2] else ''}IN ({', '.join(repr(v) for v in t[3])})"
    if kind == "isnull":
        return f"{t[1]} IS {'NOT ' if t[2] else ''}NULL"
    if kind == "not":
        return f"NOT ({render(t[1])})"
    return f"({render(t[1])}) {kind.upper()} ({render(t[2])})"


class Fail(Exception):
    pass


def as_long(v: str) -> int:
    body = v[1:] if v[:1] in "+-" else v
    if not body.isdigit() or not body.isascii():
        raise Fail
    return int(v)


def ref(t: Tree, p: Mapping[str, str]) -> bool | None:
    kind = t[0]
    if kind == "cmp":
        v = p.get(t[1])
        if v is None:
            return None
        n = as_long(v)
        return {"=": n == t[3], "<>": n != t[3], ">": n > t[3], ">=": n >= t[3], "<": n < t[3], "<=": n <= t[3]}[t[2]]
    if kind == "eqs":
        v = p.get(t[1])
        if v is None:
            return None
        return (v == t[3]) if t[2] == "=" else (v != t[3])
    if kind == "between":
        v = p.get(t[1])
        if v is None:
            return None
        n = as_long(v)
        inside = t[3] <= n <= t[4]
        return (not inside) if t[2] else inside
    if kind == "in":
        v = p.get(t[1])
        if v is None:
            return None
        return (v not in t[3]) if t[2] else (v in t[3])
    if kind == "isnull":
        present = t[1] in p
        return present if t[2] else not present
    if kind == "not":
        r = ref(t[1], p)
        return None if r is None else not r
    # AND and OR evaluate left to right and stop as soon as the left side decides.
    left = ref(t[1], p)
    if kind == "and":
        if left is False:
            return False
        right = ref(t[2], p)
        if right is False:
            return False
        return None if left is None or right is None else True
    if left is True:
        return True
    right = ref(t[2], p)
    if right is True:
        return True
    return None if left is None or right is None else False


def reference_matches(t: Tree, p: Mapping[str, str]) -> bool:
    try:
        return ref(t, p) is True
    except Fail:
        return False


@settings(max_examples=400, deadline=None)
@given(trees, properties)
def test_compiled_selectors_agree_with_the_reference_evaluator(tree: Tree, props: dict[str, str]) -> None:
    assert compile_sql92(render(tree)).matches(props) == reference_matches(tree, props)


# --- hostile selectors (issue 10) ------------------------------------------------------


def test_a_thousand_term_or_chain_evaluates_without_exhausting_the_stack() -> None:
    expr = " OR ".join(f"a{i} = {i}" for i in range(3000))
    selector = compile_sql92(expr)
    assert selector.matches({"a2999": "2999"})
    assert not selector.matches({"a1": "2"})
    chain = " AND ".join(f"a{i} IS NULL" for i in range(3000))
    assert compile_sql92(chain).matches({})


@pytest.mark.parametrize("expr", [
    "(" * 5000 + "a = 1" + ")" * 5000,
    "NOT " * 5000 + "a = 1",
    "-" * 5000 + "1 = a",
])
def test_nesting_deeper_than_the_limit_is_a_parse_error_not_a_recursion_error(expr: str) -> None:
    with pytest.raises(SqlParseError, match="nesting deeper than") as info:
        compile_sql92(expr)
    assert len(str(info.value)) < 1000  # the remark quotes the head of the selector, not all of it


def test_nesting_within_the_limit_still_parses() -> None:
    assert matches("(" * 30 + "a = 1" + ")" * 30, {"a": "1"})
    assert matches("NOT " * 30 + "a = 1", {"a": "1"})
