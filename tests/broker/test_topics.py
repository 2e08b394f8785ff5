"""The topic table: system topics, auto-creation from the template, validation, data version."""

from __future__ import annotations

import pytest

from orbitmq.broker.topics import TopicConfig, TopicTable


def system_table(auto_create: bool = True) -> TopicTable:
    table = TopicTable(clock_ms=lambda: 1_700_000_000_000)
    table.create_system_topics(
        cluster_name="DefaultCluster",
        broker_name="broker-a",
        auto_create_topic_enable=auto_create,
        default_topic_queue_nums=8,
        cluster_topic_enable=True,
        broker_topic_enable=True,
        trace_topic_name=None,
    )
    return table


def test_the_broker_creates_rocketmqs_system_topics_at_start() -> None:
    table = system_table()
    assert table.get("TBW102") == TopicConfig("TBW102", 8, 8, 7)
    assert table.get("SELF_TEST_TOPIC") == TopicConfig("SELF_TEST_TOPIC", 1, 1)
    assert table.get("BenchmarkTest") == TopicConfig("BenchmarkTest", 1024, 1024)
    assert table.get("DefaultCluster") == TopicConfig("DefaultCluster", 16, 16, 7)
    assert table.get("broker-a") == TopicConfig("broker-a", 1, 1, 7)
    assert table.get("OFFSET_MOVED_EVENT") == TopicConfig("OFFSET_MOVED_EVENT", 1, 1)
    assert table.get("SCHEDULE_TOPIC_XXXX") == TopicConfig("SCHEDULE_TOPIC_XXXX", 18, 18)
    assert table.get("DefaultCluster_REPLY_TOPIC") == TopicConfig("DefaultCluster_REPLY_TOPIC", 1, 1)


def test_without_auto_create_there_is_no_template_topic() -> None:
    table = system_table(auto_create=False)
    assert table.get("TBW102") is None
    assert table.create_in_send("T", "TBW102", 4) is None


def test_a_topic_is_auto_created_from_the_template_with_the_smaller_queue_count() -> None:
    table = system_table()
    created = table.create_in_send("NewTopic", "TBW102", 4)
    assert created == TopicConfig("NewTopic", 4, 4, 6)
    assert table.create_in_send("Big", "TBW102", 64) == TopicConfig("Big", 8, 8, 6)


def test_a_template_without_the_inherit_bit_creates_nothing() -> None:
    table = system_table()
    assert table.create_in_send("T", "SELF_TEST_TOPIC", 4) is None


def test_every_change_bumps_the_data_version_and_a_repeat_does_not() -> None:
    table = TopicTable(clock_ms=lambda: 5)
    before = table.data_version.counter
    assert table.put(TopicConfig("T", 4, 4))
    assert not table.put(TopicConfig("T", 4, 4))
    assert table.delete("T")
    assert table.data_version.counter == before + 2


@pytest.mark.parametrize("name", ["../etc", "a/b", "", "x" * 128, "with space", ".."])
def test_names_that_could_escape_the_store_folder_are_refused(name: str) -> None:
    table = TopicTable()
    with pytest.raises(ValueError):
        table.put(TopicConfig(name))


def test_loading_a_saved_table_drops_entries_with_illegal_names() -> None:
    table = system_table()
    saved = table.to_json()
    saved["topicConfigTable"]["../evil"] = TopicConfig("../evil").to_json()
    copy = TopicTable()
    copy.load_json(saved)
    assert copy.get("../evil") is None
    assert copy.get("TBW102") == TopicConfig("TBW102", 8, 8, 7)
    assert copy.data_version == table.data_version


def test_loading_a_table_reads_quoted_booleans_and_numbers_as_fastjson_does() -> None:
    # A hand-edited topics.json with "order":"false" once loaded as an ordered topic (bool("false")).
    table = TopicTable()
    table.load_json({"topicConfigTable": {"T": {"order": "false", "readQueueNums": "4", "writeQueueNums": 4}}})
    assert table.get("T") == TopicConfig("T", 4, 4)
