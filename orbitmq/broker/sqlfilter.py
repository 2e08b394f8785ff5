"""The broker's message filters: tag hash codes and SQL92 selectors on message properties.

`ConsumerFilterTable` keeps compiled SQL92 selectors by their text (RocketMQ's
ConsumerFilterManager keeps one per group and topic; the text is what decides
the result, so groups that share a selector share its compilation). Selectors
come from heartbeats (`check_heartbeat` then `register`) and from pulls that
carry their own subscription. Nothing is compiled per pull unless the
expression is new. The table is bounded by the bytes its selectors hold
(subcache.py), failed parses are remembered too (a refused selector sent again
costs no parse), and an expression longer than `MAX_EXPRESSION_LENGTH` is
refused unparsed. `precompile` parses a long new selector in a worker thread,
so the event loop does not stall on it (callers that can await do so first).

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

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from orbitmq.broker.consumers import Subscription
from orbitmq.broker.subcache import BoundedCache, expression_too_long, text_size
from orbitmq.common.record import decode_record
from orbitmq.errors import BrokerError, OrbitMQError, SubscriptionParseFailed, SystemError_
from orbitmq.filter.sql92 import Sql92Filter, SqlParseError, compile_sql92
from orbitmq.remoting.codes import ResponseCode
from orbitmq.store.api import MessageFilter

SQL92 = "SQL92"
TAG = "TAG"

#: Selectors longer than this are compiled in a worker thread by `precompile` (about 5 ms of parsing).
COMPILE_IN_THREAD_LENGTH = 4096


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
    """Compiled SQL92 selectors by expression text; see the module docstring."""

    def __init__(self, enabled: Callable[[], bool]) -> None:
        #: Reads enablePropertyFilter from the live config, so UPDATE_BROKER_CONFIG takes effect at once.
        self.enabled = enabled
        #: Expression -> its selector, or the parse error that refused it.
        self.compiled: BoundedCache[str, Sql92Filter | SqlParseError] = BoundedCache()

    # --- compiling ---------------------------------------------------------------------

    def _compile(self, expression: str) -> Sql92Filter | SqlParseError:
        cached = self.compiled.get(expression)
        if cached is None:
            cached = self._store(expression, _compile_or_error(expression))
        return cached

    def _store(self, expression: str, compiled: Sql92Filter | SqlParseError) -> Sql92Filter | SqlParseError:
        # A compiled selector holds a few closures per token: several times its text.
        size = text_size(expression) * (4 if isinstance(compiled, Sql92Filter) else 2)
        self.compiled.put(expression, compiled, size)
        return compiled

    async def precompile(self, expression_type: str, expression: str) -> None:
        """Compile a long SQL92 selector not seen before in a worker thread (no-op otherwise)."""
        if (
            (expression_type or TAG).upper() != SQL92
            or len(expression) <= COMPILE_IN_THREAD_LENGTH
            or expression_too_long(expression)
            or expression in self.compiled
            or not self.enabled()
        ):
            return
        compiled = await asyncio.to_thread(_compile_or_error, expression)
        self._store(expression, compiled)

    async def precompile_heartbeat(self, body: Any) -> None:
        """`precompile` each SQL92 subscription of a heartbeat body, before `check_heartbeat`."""
        for _, sub in _heartbeat_subscriptions(body):
            await self.precompile(str(sub.get("expressionType") or TAG), str(sub.get("subString") or ""))

    # --- checks ------------------------------------------------------------------------

    def refusal(self, expression_type: str, expression: str) -> tuple[int, str] | None:
        """Why this broker cannot run a subscription: (response code, remark), or None when it can."""
        too_long = expression_too_long(expression)
        if too_long:
            return ResponseCode.SUBSCRIPTION_PARSE_FAILED, too_long
        kind = (expression_type or TAG).upper()
        if kind == TAG:
            return None
        if kind != SQL92 or not self.enabled():
            return ResponseCode.SYSTEM_ERROR, _unsupported(kind)
        compiled = self._compile(expression)
        if isinstance(compiled, SqlParseError):
            return ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(compiled)
        return None

    def check_heartbeat(self, body: Any) -> None:
        """Refuse a heartbeat naming a subscription this broker cannot run (before anything registers)."""
        for consumer, sub in _heartbeat_subscriptions(body):
            refused = self.refusal(str(sub.get("expressionType") or TAG), str(sub.get("subString") or ""))
            if refused is not None:
                code, remark = refused
                raise BrokerError.for_code(
                    code, f"subscription of {consumer.get('groupName')} to {sub.get('topic')}: {remark}"
                )

    # --- filters -----------------------------------------------------------------------

    def register(self, group: str, subscriptions: Iterable[Subscription]) -> None:
        """Compile the SQL92 subscriptions of a heartbeat (known expressions cost a lookup)."""
        for sub in subscriptions:
            if sub.expression_type.upper() == SQL92:
                self._selector(sub)

    def filter_for(self, group: str, subscription: Subscription) -> MessageFilter:
        """The store filter for a pull. Raises a BrokerError when the subscription cannot run here."""
        kind = subscription.expression_type.upper()
        if kind == TAG:
            return TagFilter(subscription)
        if kind != SQL92 or not self.enabled():
            raise SystemError_(_unsupported(kind))
        return PropertyFilter(self._selector(subscription))

    def _selector(self, sub: Subscription) -> Sql92Filter:
        too_long = expression_too_long(sub.sub_string)
        if too_long:
            raise SubscriptionParseFailed(too_long)
        compiled = self._compile(sub.sub_string)
        if isinstance(compiled, SqlParseError):
            raise SubscriptionParseFailed(str(compiled))
        return compiled


def _compile_or_error(expression: str) -> Sql92Filter | SqlParseError:
    try:
        return compile_sql92(expression)
    except SqlParseError as exc:
        exc.__traceback__ = None  # kept in the cache: it must not pin the parser's frames
        return exc


def _heartbeat_subscriptions(body: Any) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    """(consumer, subscription) dicts of a heartbeat body; entries of other shapes are skipped."""
    if not isinstance(body, dict):
        return
    for consumer in body.get("consumerDataSet") or ():
        if not isinstance(consumer, dict):
            continue
        for sub in consumer.get("subscriptionDataSet") or ():
            if isinstance(sub, dict):
                yield consumer, sub
