"""MessageSelector: what a consumer subscribes with, a tag expression or a SQL92 selector.

    consumer.subscribe("Orders", MessageSelector.by_sql("region = 'eu' AND amount > 100"))
    consumer.subscribe("Orders", MessageSelector.by_tag("TagA || TagB"))
    consumer.subscribe("Orders", "TagA || TagB")        # a plain string is a tag expression

SQL92 selectors are checked here, when the selector is made, with the same
parser the broker uses, so a bad one raises `SqlParseError` (with the
reason) at subscribe time instead of failing later at the broker. The broker
evaluates them on message properties and needs `enablePropertyFilter=true`.
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.common.filter import EXPRESSION_TAG, SUB_ALL, SubscriptionData, build_subscription
from orbitmq.errors import ClientError
from orbitmq.filter.sql92 import compile_sql92

TAG = EXPRESSION_TAG
SQL92 = "SQL92"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """An expression and its type ("TAG" or "SQL92"); make one with `by_tag` or `by_sql`."""

    expression_type: str
    expression: str

    @classmethod
    def by_tag(cls, expression: str | None = SUB_ALL) -> MessageSelector:
        """A tag expression: "*" (everything), "TagA", "TagA || TagB"."""
        return cls(TAG, (expression or "").strip() or SUB_ALL)

    @classmethod
    def by_sql(cls, expression: str) -> MessageSelector:
        """A SQL92 selector on message properties. Raises SqlParseError when it does not parse."""
        compile_sql92(expression)
        return cls(SQL92, expression.strip())


def subscription_data(
    topic: str, selector: str | MessageSelector | None, *, sub_version: int | None = None
) -> SubscriptionData:
    """The SubscriptionData a consumer sends for `selector` (a string is a tag expression).

    Stricter than Java's FilterAPI on the client side: a blank or padded
    ``" * "`` tag expression means everything, an expression that names no
    tag (``"||"``) and an empty SQL92 selector raise `ClientError`.
    `sub_version` defaults to now in milliseconds.
    """
    if isinstance(selector, MessageSelector):
        expression: str | None = selector.expression
        expression_type = selector.expression_type
    else:
        expression, expression_type = selector, TAG
    if expression_type != TAG:
        # SQL92 text is evaluated by the broker; the client sends it trimmed.
        if not expression or not expression.strip():
            raise ClientError("an SQL92 subscription needs an expression")
        return build_subscription(topic, expression.strip(), expression_type, sub_version=sub_version)
    if expression is None or expression.strip() in ("", SUB_ALL):
        return build_subscription(topic, SUB_ALL, sub_version=sub_version)
    sd = build_subscription(topic, expression, sub_version=sub_version)
    if not sd.tags_set:
        raise ClientError(f"subscription expression {expression!r} names no tag")
    return sd
