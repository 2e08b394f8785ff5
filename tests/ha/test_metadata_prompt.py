"""Controller mode: a slave copies the master's metadata promptly, since it may become master at
any moment (docs/failover.md, "Metadata"): every second, and at once when the CommitLog brings a
record of a topic it does not know."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from orbitmq.broker.server import Broker
from orbitmq.broker.topics import TopicConfig, TopicTable


class _Metadata:
    def __init__(self) -> None:
        self.master_addr = "127.0.0.1:10911"
        self.asked = 0

    def sync_soon(self) -> None:
        self.asked += 1


def test_a_record_of_an_unknown_topic_asks_for_a_round_once_per_topic() -> None:
    topics = TopicTable()
    topics.put(TopicConfig("Known", 4, 4))
    metadata = _Metadata()
    notify = Broker._unknown_topic_syncs(cast(Any, SimpleNamespace(topics=topics)), cast(Any, metadata))
    notify("Known", 0, 1)
    assert metadata.asked == 0
    notify("CreatedJustNow", 0, 1)
    notify("CreatedJustNow", 1, 1)
    assert metadata.asked == 1, "one round per unknown topic, not one per record"
    notify("AnotherNewOne", 0, 1)
    assert metadata.asked == 2
    metadata.master_addr = ""  # no master known yet: nothing to ask
    notify("ThirdNewOne", 0, 1)
    assert metadata.asked == 2
