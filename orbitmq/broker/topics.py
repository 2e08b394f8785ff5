"""The broker's topic table (RocketMQ's TopicConfigManager), as pure state.

Holds TopicConfig per topic and the DataVersion the NameServer compares to
see that the topic set changed. It never touches a file: the broker persists
`to_json()` as topics.json (TopicConfigSerializeWrapper, §4.5/§7.5) whenever
`data_version` moved. Topic names are validated before they enter the table,
so no name can become a path outside the store.

Owned by the broker's event loop; not thread-safe. `TopicConfig` itself is
`orbitmq.common.topic_config` (re-exported here with the filter type names).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from orbitmq.broker.config_table import ConfigTable
from orbitmq.common import names
from orbitmq.common.names import PERM_INHERIT, PERM_READ, PERM_WRITE
from orbitmq.common.topic_config import MULTI_TAG, SINGLE_TAG, TopicConfig


class TopicTable(ConfigTable[TopicConfig]):
    """Topic configs of one broker plus their DataVersion (TopicConfigSerializeWrapper).

    Every change bumps `data_version` (counter + 1, timestamp now), which is
    what makes the broker re-register and re-persist.
    """

    json_table = "topicConfigTable"

    def name_of(self, config: TopicConfig) -> str:
        return config.topic_name

    def read(self, name: str, raw: Mapping[str, Any]) -> TopicConfig | None:
        """Entries with illegal names are dropped."""
        config = TopicConfig.from_json(raw, name)
        return None if names.validate_topic(config.topic_name) else config

    def put(self, config: TopicConfig) -> bool:
        """Insert or replace a topic config. Returns True when anything changed.

        Raises `ValueError` (with RocketMQ's remark) for an illegal topic name.
        """
        problem = names.validate_topic(config.topic_name)
        if problem:
            raise ValueError(problem)
        return super().put(config)

    def create_system_topics(
        self,
        *,
        cluster_name: str,
        broker_name: str,
        auto_create_topic_enable: bool,
        default_topic_queue_nums: int,
        cluster_topic_enable: bool,
        broker_topic_enable: bool,
        trace_topic_name: str | None,
    ) -> None:
        """The topics a 4.9.7 broker creates at start (§6.2). Existing configs are kept."""
        rw = PERM_READ | PERM_WRITE
        wanted = [TopicConfig(names.SELF_TEST_TOPIC, 1, 1)]
        if not auto_create_topic_enable:
            self.disable_auto_create()
        else:
            wanted.append(
                TopicConfig(
                    names.AUTO_CREATE_TOPIC_KEY_TOPIC,
                    default_topic_queue_nums,
                    default_topic_queue_nums,
                    PERM_INHERIT | rw,
                )
            )
        wanted.append(TopicConfig(names.BENCHMARK_TOPIC, 1024, 1024))
        wanted.append(TopicConfig(cluster_name, perm=PERM_INHERIT | (rw if cluster_topic_enable else 0)))
        wanted.append(TopicConfig(broker_name, 1, 1, PERM_INHERIT | (rw if broker_topic_enable else 0)))
        wanted.append(TopicConfig(names.OFFSET_MOVED_EVENT, 1, 1))
        wanted.append(TopicConfig(names.SCHEDULE_TOPIC, 18, 18))
        if trace_topic_name:
            wanted.append(TopicConfig(trace_topic_name, 1, 1))
        wanted.append(TopicConfig(names.reply_topic(cluster_name), 1, 1))
        for config in wanted:
            if config.topic_name not in self._items and not names.validate_topic(config.topic_name):
                self.put(config)

    def disable_auto_create(self) -> bool:
        """autoCreateTopicEnable=false: TBW102 loses the inherit permission (read and write
        stay), as TopicConfigManager.createTopicInSendMessageMethod sets it, so no topic can be
        created from it any more. Returns True when the table changed."""
        template = self._items.get(names.AUTO_CREATE_TOPIC_KEY_TOPIC)
        if template is None or template.perm == PERM_READ | PERM_WRITE:
            return False
        return self.put(replace(template, perm=PERM_READ | PERM_WRITE))

    def create_in_send(
        self, topic: str, default_topic: str, queue_nums: int, topic_sys_flag: int = 0
    ) -> TopicConfig | None:
        """Auto-create `topic` from the template `default_topic` (§6.2), or None.

        The template must exist and carry the inherit bit; the new topic gets
        min(queue_nums, template write queues) queues and the template's perm
        without inherit.
        """
        existing = self._items.get(topic)
        if existing is not None:
            return existing
        template = self._items.get(default_topic)
        if template is None or not template.inheritable or queue_nums <= 0:
            return None
        nums = min(queue_nums, template.write_queue_nums)
        config = TopicConfig(
            topic, nums, nums, template.perm & ~PERM_INHERIT, topic_sys_flag=topic_sys_flag
        )
        self.put(config)
        return config

    def ensure(self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0) -> TopicConfig:
        """The topic's config, created with the given shape when missing (retry/DLQ topics)."""
        existing = self._items.get(topic)
        if existing is not None:
            return existing
        config = TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag)
        self.put(config)
        return config

    def set_order(self, topic: str, order: bool) -> None:
        config = self._items.get(topic)
        if config is not None and config.order != order:
            self.put(replace(config, order=order))


__all__ = ["MULTI_TAG", "PERM_INHERIT", "PERM_READ", "PERM_WRITE", "SINGLE_TAG", "TopicConfig", "TopicTable"]
