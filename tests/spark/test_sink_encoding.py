"""The sink's pure parts: batch items, property checks and per-queue batching."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")

from orbitmq.common.record import decode_batch
from orbitmq.errors import MessageValidationError
from orbitmq.spark.sink import MAX_BATCH_BODY_BYTES, QueueBatcher, _item, _user_properties


def test_items_decode_as_batch_messages_with_their_properties() -> None:
    items = [_item(b"one", b"UNIQ_KEY\x01A\x02TAGS\x01T"), _item(b"two", b"UNIQ_KEY\x01B")]
    msgs = decode_batch(b"".join(items), topic="t")
    assert [m.body for m in msgs] == [b"one", b"two"]
    assert msgs[0].properties == {"UNIQ_KEY": "A", "TAGS": "T"} and msgs[1].properties == {"UNIQ_KEY": "B"}


def test_user_properties_are_checked_and_spark_ones_replaced() -> None:
    assert _user_properties([("a", "1"), ("b", None), ("SPARK_SEQ", "9")], 0) == "\x02a\x011"
    for bad in [("KEYS", "x"), ("", "x"), ("a", ""), ("a\x01", "x"), ("a", "x\x02")]:
        with pytest.raises(MessageValidationError):
            _user_properties([bad], 3)


def test_batcher_sends_each_queue_in_order_by_count_and_by_size() -> None:
    sent: list[tuple[object, list[bytes]]] = []
    batcher = QueueBatcher(lambda q, items: sent.append((q, items)), batch_size=3)
    for i in range(5):
        batcher.add(("t", i % 2), b"%d" % i)
    assert sent == [(("t", 0), [b"0", b"2", b"4"])]
    batcher.add(("t", 1), b"x" * MAX_BATCH_BODY_BYTES)
    assert sent[-1] == (("t", 1), [b"1", b"3", b"x" * MAX_BATCH_BODY_BYTES])
    batcher.add(("t", 0), b"5")
    batcher.flush()
    assert sent[-1] == (("t", 0), [b"5"]) and batcher.sent == 7


def test_sharding_keys_pick_the_queue_the_java_hash_selector_picks() -> None:
    from orbitmq.client.queue import MessageQueue
    from orbitmq.client.selector import hash_selector
    from orbitmq.spark.offsets import QueueRef
    from orbitmq.spark.sink import _Router

    queues = tuple(QueueRef("t", b, i) for b in ("broker-a", "broker-b") for i in range(3))

    class Routes:
        def route(self, topic: str) -> object:
            return type("Route", (), {"write_queues": queues})()

    router = _Router(Routes(), batch_size=4, start=0)  # type: ignore[arg-type]
    mqs = [MessageQueue(q.topic, q.broker_name, q.queue_id) for q in queues]
    for key in ["order-1", "order-2", "", "ünïcode", "Aa", "BB", "x" * 40]:
        _, index = router.pick("t", key)
        assert mqs[index] == hash_selector(mqs, None, key)
