"""fastjson-compatible JSON bodies: the reference shapes of §4 and §7.5 read and written."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.common.jsonbody import (
    JsonBodyError,
    ObjectKeyMap,
    dumps,
    dumps_legacy,
    dumps_pretty,
    dumps_route_standard,
    int_keys,
    loads,
    object_key_items,
)

ROUTE_LEGACY = (
    '{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.1:10911",1:"192.168.0.2:10911"},"brokerName":"broker-a",'
    '"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,'
    '"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
ROUTE_STANDARD = (
    '{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.1:10911","1":"192.168.0.2:10911"},"brokerName":"broker-a",'
    '"cluster":"DefaultCluster"}],"filterServerTable":{},"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":'
    '"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
CLUSTER_INFO = (
    '{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"192.168.0.1:10911",1:"192.168.0.2:10911"},'
    '"brokerName":"broker-a","cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
)
CONSUME_STATS = (
    '{"consumeTps":1.5,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:'
    '{"brokerOffset":10,"consumerOffset":5,"lastTimestamp":1700000000000}}}'
)
RESET_OFFSET = '{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:42}}'


def test_legacy_route_with_bare_numeric_keys_parses_and_writes_back_identically() -> None:
    route = loads(ROUTE_LEGACY.encode())
    assert route["brokerDatas"][0]["brokerAddrs"] == {0: "192.168.0.1:10911", 1: "192.168.0.2:10911"}
    assert dumps_legacy(route).decode() == ROUTE_LEGACY


def test_standard_route_form_quotes_and_sorts_keys_numerically() -> None:
    route = loads(ROUTE_LEGACY)
    route["orderTopicConf"] = "broker-a:4"
    assert dumps_route_standard(route).decode() == ROUTE_STANDARD
    addrs = {10: "x", 2: "y"}
    assert dumps_route_standard(addrs) == b'{"2":"y","10":"x"}'


def test_standard_route_form_escapes_non_ascii_with_upper_case_hex() -> None:
    assert dumps_route_standard({"k": "é😀"}) == b'{"k":"\\u00E9\\uD83D\\uDE00"}'
    assert loads(dumps_route_standard({"k": "é😀"})) == {"k": "é😀"}


def test_both_key_forms_normalize_to_int_keys() -> None:
    assert int_keys(loads(ROUTE_STANDARD)["brokerDatas"][0]["brokerAddrs"]) == {
        0: "192.168.0.1:10911", 1: "192.168.0.2:10911"}


def test_cluster_info_is_written_in_the_legacy_form() -> None:
    assert dumps_legacy(loads(CLUSTER_INFO)).decode() == CLUSTER_INFO


@pytest.mark.parametrize("text", [CONSUME_STATS, RESET_OFFSET])
def test_object_keyed_maps_parse_into_pairs_and_write_back_identically(text: str) -> None:
    value = loads(text)
    table = value["offsetTable"]
    assert isinstance(table, ObjectKeyMap)
    assert table[0][0] == {"brokerName": "broker-a", "queueId": 0, "topic": "T"}
    assert table.get_by({"topic": "T", "queueId": 0, "brokerName": "broker-a"}) is not None
    assert dumps_legacy(value).decode() == text


def test_lenient_parser_accepts_what_fastjson_accepts() -> None:
    assert loads("{name:'it\\'s', \"n\":-3, 'f':2.5e1, list:[1,2,], t:true, z:null,}") == {
        "name": "it's", "n": -3, "f": 25.0, "list": [1, 2], "t": True, "z": None}
    assert loads(" {0 : 'a' , -1:\"b\"} ") == {0: "a", -1: "b"}
    assert loads('{"s":"\\u00e9\\n\\/"}') == {"s": "é\n/"}


@pytest.mark.parametrize("bad", ["", "{", "{a:}", '{"a":1} x', "[1 2]", "{'a':1", '"\\q"', "tru", "{a 1}"])
def test_text_neither_parser_accepts_raises_a_clear_error(bad: str) -> None:
    with pytest.raises(JsonBodyError):
        loads(bad)


def test_deep_nesting_is_refused_rather_than_overflowing_the_stack() -> None:
    with pytest.raises(JsonBodyError):
        loads("{a:" * 2000 + "1" + "}" * 2000)


def test_standard_writer_sorts_keys_and_quotes_int_keys() -> None:
    assert dumps({"b": 1, "a": {3: "x"}}) == b'{"a":{"3":"x"},"b":1}'


def test_legacy_writer_omits_none_and_escapes_controls_but_keeps_utf8() -> None:
    assert dumps_legacy({"a": None, "b": "é\n\x01"}) == '{"b":"é\\n\\u0001"}'.encode()


def test_consumer_offset_file_is_written_in_fastjson_pretty_form() -> None:
    body = {"offsetTable": {"T@CG": {0: 12, 1: 7}}}
    assert dumps_pretty(body).decode() == '{\n\t"offsetTable":{\n\t\t"T@CG":{0:12,1:7\n\t\t}\n\t}\n}'
    assert loads(dumps_pretty(body)) == body


def test_topics_file_pretty_form_puts_each_field_on_its_own_line() -> None:
    body = {"dataVersion": {"counter": 1, "timestamp": 1700000000000}, "topicConfigTable": {}}
    assert dumps_pretty(body).decode() == (
        '{\n\t"dataVersion":{\n\t\t"counter":1,\n\t\t"timestamp":1700000000000\n\t},\n\t"topicConfigTable":{}\n}'
    )
    assert dumps_pretty({"l": [1, "a"], "e": []}).decode() == '{\n\t"e":[],\n\t"l":[\n\t\t1,\n\t\t"a"\n\t]\n}'


_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=10)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    | st.dictionaries(st.integers(-1000, 1000), inner, max_size=4),
    max_leaves=20,
)


def _drop_none_values(v):  # type: ignore[no-untyped-def]
    if isinstance(v, dict):
        return {k: _drop_none_values(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_none_values(x) for x in v]
    return v


@given(_json)
def test_legacy_and_pretty_forms_round_trip(value) -> None:  # type: ignore[no-untyped-def]
    expected = _drop_none_values(value)
    assert loads(dumps_legacy(value)) == expected
    assert loads(dumps_pretty(value)) == expected


@given(st.recursive(_scalars, lambda i: st.lists(i, max_size=4) | st.dictionaries(st.text(max_size=6), i, max_size=4)))
def test_standard_json_takes_the_same_values_through_both_parsers(value) -> None:  # type: ignore[no-untyped-def]
    assert loads(dumps(value)) == orjson.loads(orjson.dumps(value)) == value


_mq = st.fixed_dictionaries(
    {"brokerName": st.sampled_from(["broker-a", "broker-b"]), "queueId": st.integers(0, 15), "topic": st.text(max_size=5)}
)


@given(st.lists(st.tuples(_mq, st.integers(-(2**63), 2**63 - 1) | st.fixed_dictionaries({"minOffset": st.integers()})),
                max_size=5))
def test_object_keyed_maps_round_trip_through_both_fastjson_forms(pairs) -> None:  # type: ignore[no-untyped-def]
    body = {"offsetTable": ObjectKeyMap(pairs)}
    for text in (dumps_legacy(body), dumps_pretty(body)):
        assert object_key_items(loads(text)["offsetTable"]) == pairs


def test_object_keys_written_as_strings_by_other_sdks_are_understood() -> None:
    mq = {"brokerName": "b", "queueId": 1, "topic": "T"}
    assert object_key_items(loads(rb'{"{\"brokerName\":\"b\",\"queueId\":1,\"topic\":\"T\"}":7}')) == [(mq, 7)]
    assert object_key_items({}) == [] and object_key_items(None) == []
    with pytest.raises(JsonBodyError):
        object_key_items({"plain": 1})


def test_kv_config_file_pretty_form() -> None:
    body = {"configTable": {"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}}}
    assert dumps_pretty(body).decode() == (
        '{\n\t"configTable":{\n\t\t"ORDER_TOPIC_CONFIG":{\n\t\t\t"T":"broker-a:4"\n\t\t}\n\t}\n}'
    )


def test_delay_offset_file_keeps_numeric_keys_bare() -> None:
    body = {"offsetTable": {2: 5, 1: 7, 10: 0}}
    assert dumps_pretty(body).decode() == '{\n\t"offsetTable":{1:7,2:5,10:0\n\t}\n}'
    assert loads(dumps_pretty(body)) == body


def test_floats_and_unicode_survive_the_lenient_parser() -> None:
    text = "{a:1.5,b:-2E3,c:'\u00e9\\u00e9',d:1e2,'e':0}"
    assert loads(text) == {"a": 1.5, "b": -2000.0, "c": "éé", "d": 100.0, "e": 0}


def test_non_utf8_bodies_are_rejected_cleanly() -> None:
    with pytest.raises(JsonBodyError):
        loads(b"{a:'\xff'}")


def test_standard_writer_refuses_object_keyed_maps_rather_than_writing_pairs() -> None:
    with pytest.raises(TypeError):
        dumps({"offsetTable": ObjectKeyMap([({"topic": "T"}, 1)])})


def test_java_hash_map_is_written_in_javas_iteration_order() -> None:
    """fastjson prints a HashMap in its iteration order; these orders come from java.util.HashMap
    (22 String keys, so the table has grown to 32 buckets; Long keys, one past 32 bits)."""
    from orbitmq.common.jsonbody import JavaHashMap

    keys = ["192.168.0.2", "10.0.0.1", "127.0.0.1", *"abcdefghijklmnopq", "10.1.1.1", "10.1.1.2"]
    assert list(JavaHashMap.of((k, 1) for k in keys)) == [
        "192.168.0.2", "a", "b", "10.1.1.2", "c", "10.1.1.1", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m",
        "n", "o", "p", "q", "10.0.0.1", "127.0.0.1"]
    longs = JavaHashMap.of((k, "v") for k in [1, 0, 17, 16, 5, 100000000000])
    assert list(longs) == [0, 16, 1, 17, 100000000000, 5]
    assert dumps_legacy({"m": JavaHashMap.of([("c2", 1), ("c1", 2)])}) == b'{"m":{"c1":2,"c2":1}}'
    # 17 and 1 share bucket 1 of 16: insertion order
    assert dumps_legacy({"m": JavaHashMap.of([(17, "x"), (1, "y")])}) == b'{"m":{17:"x",1:"y"}}'


def test_java_concurrent_hash_map_order_grows_its_table_one_entry_earlier() -> None:
    """fastjson reads a ConcurrentMap field (TopicConfigSerializeWrapper.topicConfigTable) into a
    ConcurrentHashMap; with 12 keys its table has 32 buckets where a HashMap's has 16. Orders
    printed by java.util.concurrent.ConcurrentHashMap and java.util.HashMap."""
    from orbitmq.common.jsonbody import JavaHashMap

    keys = ["TopicA", "TopicB", "TopicC", "orders", "payments", "TBW102", "BenchmarkTest", "SELF_TEST_TOPIC",
            "OFFSET_MOVED_EVENT", "rmq_sys_TRACE_DATA", "DefaultCluster", "broker-a"]
    assert list(JavaHashMap.of(((k, 1) for k in keys), concurrent=True)) == [
        "payments", "BenchmarkTest", "OFFSET_MOVED_EVENT", "TBW102", "SELF_TEST_TOPIC", "DefaultCluster", "TopicC",
        "TopicB", "TopicA", "orders", "broker-a", "rmq_sys_TRACE_DATA"]
    assert list(JavaHashMap.of((k, 1) for k in keys)) == [
        "TopicC", "TopicB", "TopicA", "payments", "BenchmarkTest", "OFFSET_MOVED_EVENT", "orders", "TBW102",
        "broker-a", "SELF_TEST_TOPIC", "rmq_sys_TRACE_DATA", "DefaultCluster"]
