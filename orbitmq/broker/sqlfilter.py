"""The broker's message filters: tag hash codes and SQL92 selectors on message properties.

`ConsumerFilterTable` keeps the compiled SQL92 selector of each (group,
topic), compiled once per subscription version (RocketMQ's ConsumerFilterManager
keeps the same data). Selectors come from heartbeats (`check_heartbeat` then
`register`) and from pulls that carry their own subscription. Nothing is
compiled per pull unless the subscription changed.

SQL92 needs `enablePropertyFilter=true`, as in RocketMQ; otherwise SQL92
subscriptions are refused with RocketMQ's remark. A selector that does not
parse is refused wherever it shows up (heartbeat, CHECK_CLIENT_CONFIG,
pull) with SUBSCRIPTION_PARSE_FAILED and the parse error as the remark.

The store asks a filter twice (`MessageFilter`): with the ConsumeQueue tag
slot, where a tag filter decides and a SQL92 filter lets everything pass,
and then with the record, where only a SQL92 filter decodes the properties,
so tag-only subscriptions pay nothing for SQL92 support.

Owned by the broker's event loop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from orbitmq.broker.consumers import Subscription
from orbitmq.common.record import decode_record
from orbitmq.errors import BrokerError, OrbitMQError, SubscriptionParseFailed, SystemError_
from orbitmq.filter.sql92 import Sql92Filter, SqlParseError, compile_sql92
from orbitmq.remoting.codes import ResponseCode
from orbitmq.store.api import MessageFilter

SQL92 = "SQL92"
TAG = "TAG"


def _unsupported(kind: str) -> str:
    """RocketMQ's remark, plus the setting that would change the answer."""
    remark = f"The broker does not support consumer to filter message by {kind}"
    return remark + " (enablePropertyFilter=false)" if kind == SQL92 else remark


def _int32(value: int) -> int:
    v = value & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


class TagFilter:
    """Tag hash codes from the ConsumeQueue; every record that passes is taken whole."""

    __slots__ = ("code_set", "match_all")

    def __init__(self, subscription: Subscription) -> None:
        self.code_set = subscription.code_set
        self.match_all = subscription.matches_all

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return self.match_all or _int32(tags_code) in self.code_set

    def is_matched_by_commit_log(self, record: memoryview, properties: Mapping[str, str] | None) -> bool:
        return True


class PropertyFilter:
    """A SQL92 selector evaluated on each candidate record's properties."""

    __slots__ = ("selector",)

    def __init__(self, selector: Sql92Filter) -> None:
        self.selector = selector

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        # The tag slot says nothing about properties (RocketMQ's bloom filter is off by default).
        return True

    def is_matched_by_commit_log(self, record: memoryview, properties: Mapping[str, str] | None) -> bool:
        if properties is None:
            try:
                properties = decode_record(record, with_body=False, decompress=False).properties
            except OrbitMQError:
                return False
        return self.selector.matches(properties)


class ConsumerFilterTable:
    """Compiled SQL92 selectors by (group, topic) and version; see the module docstring."""

    def __init__(self, enabled: Callable[[], bool]) -> None:
        #: Reads enablePropertyFilter from the live config, so UPDATE_BROKER_CONFIG takes effect at once.
        self.enabled = enabled
        self._compiled: dict[tuple[str, str], tuple[int, str, Sql92Filter]] = {}

    # --- checks ------------------------------------------------------------------------

    def refusal(self, expression_type: str, expression: str) -> tuple[int, str] | None:
        """Why this broker cannot run a subscription: (response code, remark), or None when it can."""
        kind = (expression_type or TAG).upper()
        if kind == TAG:
            return None
        if kind != SQL92 or not self.enabled():
            return ResponseCode.SYSTEM_ERROR, _unsupported(kind)
        try:
            compile_sql92(expression)
        except SqlParseError as exc:
            return ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)
        return None

    def check_heartbeat(self, body: Any) -> None:
        """Refuse a heartbeat naming a subscription this broker cannot run (before anything registers)."""
        if not isinstance(body, dict):
            return
        for consumer in body.get("consumerDataSet") or ():
            if not isinstance(consumer, dict):
                continue
            for sub in consumer.get("subscriptionDataSet") or ():
                if not isinstance(sub, dict):
                    continue
                kind = str(sub.get("expressionType") or TAG)
                if kind.upper() == TAG:
                    continue
                expression = str(sub.get("subString") or "")
                cached = self._compiled.get((str(consumer.get("groupName") or ""), str(sub.get("topic") or "")))
                if kind.upper() == SQL92 and cached is not None and cached[1] == expression and self.enabled():
                    continue  # compiled before: the every-30-seconds heartbeat costs no parse
                refused = self.refusal(kind, expression)
                if refused is not None:
                    code, remark = refused
                    raise BrokerError.for_code(
                        code, f"subscription of {consumer.get('groupName')} to {sub.get('topic')}: "
                        f"{remark}"
                    )

    # --- filters -----------------------------------------------------------------------

    def register(self, group: str, subscriptions: Iterable[Subscription]) -> None:
        """Compile the SQL92 subscriptions of a heartbeat (unchanged versions are kept as they are)."""
        for sub in subscriptions:
            if sub.expression_type.upper() == SQL92:
                self._selector(group, sub)

    def filter_for(self, group: str, subscription: Subscription) -> MessageFilter:
        """The store filter for a pull. Raises a BrokerError when the subscription cannot run here."""
        kind = subscription.expression_type.upper()
        if kind == TAG:
            return TagFilter(subscription)
        if kind != SQL92 or not self.enabled():
            raise SystemError_(_unsupported(kind))
        return PropertyFilter(self._selector(group, subscription))

    def _selector(self, group: str, sub: Subscription) -> Sql92Filter:
        key = (group, sub.topic)
        cached = self._compiled.get(key)
        if cached is not None and cached[0] == sub.sub_version and cached[1] == sub.sub_string:
            return cached[2]
        try:
            selector = compile_sql92(sub.sub_string)
        except SqlParseError as exc:
            raise SubscriptionParseFailed(str(exc)) from None
        self._compiled[key] = (sub.sub_version, sub.sub_string, selector)
        return selector

    def forget_group(self, group: str) -> None:
        """Drop a group's selectors (its consumers are gone)."""
        for key in [k for k in self._compiled if k[0] == group]:
            del self._compiled[key]
