"""Name rules, permissions and tag-expression subscriptions."""

from __future__ import annotations

import pytest

from orbitmq.common import names
from orbitmq.common.filter import SUB_ALL, SubscriptionData, build_subscription
from orbitmq.common.jsonbody import dumps_legacy, loads
from orbitmq.errors import MessageValidationError, SubscriptionParseFailed


@pytest.mark.parametrize(
    ("topic", "remark"),
    [
        ("", "The specified topic is blank."),
        ("  ", "The specified topic is blank."),
        (None, "The specified topic is blank."),
        ("a.b", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
        ("../x", "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"),
        ("t" * 128, "The specified topic is longer than topic max length."),
        ("t" * 127, None),
        ("%RETRY%my_group-1|x", None),
    ],
)
def test_broker_topic_validation_answers_with_rocketmqs_remarks(topic: str | None, remark: str | None) -> None:
    assert names.validate_topic(topic) == remark


def test_client_checks_use_the_java_clients_texts() -> None:
    with pytest.raises(MessageValidationError, match=r"^The specified topic is blank$"):
        names.check_topic(" ")
    with pytest.raises(MessageValidationError, match=r"longer than topic max length 127\.$"):
        names.check_topic("x" * 128)
    with pytest.raises(MessageValidationError, match=r"^The specified topic\[a b\] contains illegal characters"):
        names.check_topic("a b")
    names.check_topic("T")
    with pytest.raises(MessageValidationError, match="group is blank"):
        names.check_group("")
    with pytest.raises(MessageValidationError, match="longer than group max length 255"):
        names.check_group("g" * 256)
    with pytest.raises(MessageValidationError, match=r"group\[g!\] contains illegal"):
        names.check_group("g!")
    names.check_group("g" * 255)


def test_system_and_not_sendable_topics() -> None:
    for topic in ("TBW102", "SCHEDULE_TOPIC_XXXX", "rmq_sys_anything", "RMQ_SYS_TRACE_TOPIC"):
        assert names.is_system_topic(topic)
    assert not names.is_system_topic("T")
    assert names.is_not_allowed_send_topic("RMQ_SYS_TRANS_HALF_TOPIC")
    assert not names.is_not_allowed_send_topic("TBW102")
    assert names.send_forbidden_remark("X") == "Sending message to topic[X] is forbidden."
    assert names.is_system_group("CID_RMQ_SYS_TRANS") and names.is_system_group("CLIENT_INNER_PRODUCER")


def test_retry_and_dlq_names_map_back_to_their_group() -> None:
    assert names.retry_topic("CG") == "%RETRY%CG" and names.dlq_topic("CG") == "%DLQ%CG"
    assert names.is_retry_topic("%RETRY%CG") and names.is_dlq_topic("%DLQ%CG")
    assert names.group_of_retry_or_dlq_topic("%RETRY%CG") == "CG"
    assert names.group_of_retry_or_dlq_topic("%DLQ%CG") == "CG"
    assert names.group_of_retry_or_dlq_topic("T") is None
    assert names.reply_topic("DefaultCluster") == "DefaultCluster_REPLY_TOPIC"


@pytest.mark.parametrize(("perm", "text"), [(6, "RW-"), (7, "RWX"), (4, "R--"), (2, "-W-"), (0, "---"), (1, "--X")])
def test_permissions_render_like_the_admin_tools(perm: int, text: str) -> None:
    assert names.perm_to_string(perm) == text


def test_tag_expression_splits_on_double_bar_and_records_hash_codes() -> None:
    sub = build_subscription("T", " TagA ||TagB|| ||TagA", sub_version=1700000000000)
    assert sub.tags_set == ("TagA", "TagB")
    assert sub.code_set == (2598919, 2598920)
    assert sub.sub_string == " TagA ||TagB|| ||TagA"


@pytest.mark.parametrize("expr", [None, "", "*"])
def test_star_empty_or_missing_expressions_subscribe_to_everything(expr: str | None) -> None:
    sub = build_subscription("T", expr)
    assert sub.sub_string == SUB_ALL and sub.tags_set == () and sub.code_set == ()
    assert sub.matches_tags_code(12345) and sub.matches_tag(None)


def test_broker_filters_by_low_32_bits_and_client_by_tag_string() -> None:
    sub = build_subscription("T", "TagA || TagB")
    assert sub.matches_tags_code(2598919)
    assert sub.matches_tags_code(2598919 + (5 << 32))  # only the low 32 bits count
    assert not sub.matches_tags_code(0)
    assert sub.matches_tag("TagB") and not sub.matches_tag("TagC") and not sub.matches_tag(None)
    neg = build_subscription("T", "polygenelubricants")
    assert neg.matches_tags_code(-(2**31))


def test_subscription_json_matches_the_heartbeat_shape() -> None:
    sub = build_subscription("T", "TagA || TagB", sub_version=1700000000000)
    text = (
        '{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG","subString":"TagA || TagB",'
        '"subVersion":1700000000000,"tagsSet":["TagA","TagB"],"topic":"T"}'
    )
    assert dumps_legacy(sub.to_json_dict()).decode() == text
    assert SubscriptionData.from_json_dict(loads(text)) == sub


def test_sql92_keeps_the_expression_and_bad_json_is_a_parse_failure() -> None:
    sub = build_subscription("T", "a > 1", "SQL92")
    assert sub.expression_type == "SQL92" and sub.sub_string == "a > 1" and sub.tags_set == ()
    with pytest.raises(SubscriptionParseFailed):
        build_subscription("T", "", "SQL92")
    with pytest.raises(SubscriptionParseFailed):
        SubscriptionData.from_json_dict({"subString": "*"})
    with pytest.raises(SubscriptionParseFailed):
        SubscriptionData.from_json_dict({"topic": "T", "codeSet": ["x"]})
