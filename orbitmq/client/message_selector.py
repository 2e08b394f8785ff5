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

from orbitmq.client.subscription import SUB_ALL, SubscriptionData
from orbitmq.filter.sql92 import compile_sql92

TAG = "TAG"
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


def subscription_data(topic: str, selector: str | MessageSelector | None) -> SubscriptionData:
    """The SubscriptionData a consumer sends for `selector` (a string is a tag expression)."""
    if isinstance(selector, MessageSelector):
        return SubscriptionData.build(topic, selector.expression, selector.expression_type)
    return SubscriptionData.build(topic, selector)
