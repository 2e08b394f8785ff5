"""The pieces behind retry choices and dead-letter tools, without a server."""

from __future__ import annotations

import functools

import pytest

from orbitmq.admin import dlq
from orbitmq.client import ConsumeOrderlyContext, PushConsumer
from orbitmq.client.config import ConsumerConfig, from_kwargs
from orbitmq.client.consume_orderly import OrderlyConsumeService
from orbitmq.client.listener import takes_context
from orbitmq.client.pulling import level_for_ms
from orbitmq.client.queue import MessageQueue
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.errors import ConfigError
from orbitmq.filter.sql92 import SqlParseError


def test_listeners_with_a_second_positional_parameter_get_the_context() -> None:
    def plain(msgs: list[MessageExt]) -> None: ...
    def with_context(msgs: list[MessageExt], context: object) -> None: ...
    def varargs(*args: object) -> None: ...
    def keyword_only(msgs: list[MessageExt], *, context: object = None) -> None: ...

    class Callable_:
        def __call__(self, msgs: list[MessageExt], context: object) -> None: ...

    async def coroutine(msgs: list[MessageExt]) -> None: ...

    assert not takes_context(plain)
    assert takes_context(with_context)
    assert takes_context(varargs)
    assert not takes_context(keyword_only)
    assert takes_context(Callable_())
    assert not takes_context(coroutine)
    assert not takes_context(functools.partial(with_context, []))


def test_a_delay_in_ms_maps_to_the_first_default_level_at_least_as_long() -> None:
    assert [level_for_ms(ms) for ms in (0, 1_000, 1_001, 2_000, 30_000, 7_200_000, 10**9)] == [1, 1, 2, 2, 4, 18, 18]


def test_error_text_fits_a_property_value() -> None:
    text = mc.error_text("a\x01b\x02c" + "x" * 5000)
    assert "\x01" not in text and "\x02" not in text
    assert len(text) == mc.LAST_ERROR_MAX_CHARS and text.startswith("a b c") and text.endswith("...")


@pytest.mark.parametrize("option", ["orderly_max_attempts", "orderly_backoff_ms", "orderly_backoff_max_ms"])
@pytest.mark.parametrize("value", [-1, "3", 1.5, True])
def test_orderly_policy_options_must_be_non_negative_integers(option: str, value: object) -> None:
    with pytest.raises(ConfigError, match=option):
        PushConsumer("CG", **{option: value})


def _service(**options: object) -> OrderlyConsumeService:
    config = from_kwargs(ConsumerConfig, **options)
    return OrderlyConsumeService(config, None, None, None, None)  # type: ignore[arg-type]


def _msg(reconsume_times: int) -> MessageExt:
    return MessageExt(topic="T", body=b"x", reconsume_times=reconsume_times)


def test_orderly_pause_is_rocketmqs_fixed_one_unless_a_backoff_or_the_context_says_otherwise() -> None:
    mq = MessageQueue("T", "b", 0)
    fixed = _service(suspend_current_queue_time_ms=700)
    assert [fixed._suspend_ms([_msg(n)], ConsumeOrderlyContext(mq)) for n in (0, 3)] == [700, 700]
    backoff = _service(orderly_backoff_ms=100, orderly_backoff_max_ms=500)
    assert [backoff._suspend_ms([_msg(n)], ConsumeOrderlyContext(mq)) for n in range(5)] == [100, 200, 400, 500, 500]
    assert backoff._suspend_ms([_msg(0)], ConsumeOrderlyContext(mq, suspend_current_queue_time_millis=30)) == 30


def test_orderly_attempts_default_to_rocketmqs_unlimited_retries() -> None:
    assert _service().max_reconsume == (1 << 31) - 1
    assert _service(max_reconsume_times=4).max_reconsume == 4
    assert _service(max_reconsume_times=4, orderly_max_attempts=2).max_reconsume == 1


def _letter(**props: str) -> dlq.DeadLetter:
    msg = MessageExt(topic="%DLQ%G", body=b"b", properties=dict(props), store_timestamp=5_000)
    return dlq.DeadLetter(msg, "broker-a")


def test_selection_criteria_all_hold() -> None:
    letter = _letter(KEYS="k1 k2", UNIQ_KEY="ID1", RETRY_TOPIC="T", ORBITMQ_ATTEMPTS="4")
    assert dlq.Selection.of().matches(letter)
    assert dlq.Selection.of(key="k2", ids=["ID1"], begin_ms=5_000, end_ms=5_000, sql="ORBITMQ_ATTEMPTS > 3").matches(letter)
    assert not dlq.Selection.of(key="k3").matches(letter)
    assert not dlq.Selection.of(ids=["ID2"]).matches(letter)
    assert not dlq.Selection.of(begin_ms=5_001).matches(letter)
    assert not dlq.Selection.of(sql="ORBITMQ_ATTEMPTS > 4").matches(letter)
    assert (letter.original_topic, letter.original_id, letter.attempts) == ("T", "ID1", 4)
    with pytest.raises(SqlParseError):
        dlq.Selection.of(sql="a >")
    with pytest.raises(ValueError, match="time range"):
        dlq.Selection.of(begin_ms=2, end_ms=1)


def test_a_resent_copy_has_a_stable_unique_key_and_no_retry_bookkeeping() -> None:
    letter = _letter(UNIQ_KEY="ID1", RETRY_TOPIC="T", ORBITMQ_LAST_ERROR="boom", KEYS="k", color="red")
    props = dlq.resend_properties("G", letter)
    assert props == {"KEYS": "k", "color": "red", mc.ORBITMQ_DLQ_ORIGIN: "ID1",
                     mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX: dlq.resend_unique_key("G", "ID1")}
    assert dlq.resend_unique_key("G", "ID1") == dlq.resend_unique_key("G", "ID1")
    assert dlq.resend_unique_key("G", "ID1") != dlq.resend_unique_key("G2", "ID1")
    assert len(dlq.resend_unique_key("G", "ID1")) == 32
