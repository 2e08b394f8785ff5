"""consumerStatus and consumeMessageDirectly against a live PushConsumer, through the broker's forwarding."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.admin.test_commands_on_dev import admin, create_topic, ok, table
from tests.admin.test_live_consumer import GROUP, TOPIC, ConsumerThread
from tests.support.dev import DevServer
from tests.support.procs import eventually

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def live(dev: DevServer) -> Iterator[ConsumerThread]:
    create_topic(dev, TOPIC, 2)
    consumer = ConsumerThread(dev.namesrv)
    consumer.start()
    try:
        yield consumer
    finally:
        consumer.stop()


def test_consumer_status_lists_each_client_then_details_one(dev: DevServer, live: ConsumerThread) -> None:
    for i in range(4):
        ok(dev, "sendMessage", "-t", TOPIC, "-p", f"status-{i}", "-b", dev.broker_name, "-i", str(i % 2))
    eventually(lambda: live.count() >= 4, timeout=20, message="the consumer did not get the 4 messages")

    clients = table(ok(dev, "consumerStatus", "-g", GROUP))
    assert len(clients) == 1
    assert (clients[0]["Consume Type"], clients[0]["Orderly"], clients[0]["Queues"]) == ("CONSUME_PASSIVELY", "false", "3")

    detail = ok(dev, "consumerStatus", "-g", GROUP, "-i", clients[0]["ClientId"])
    assert "PROP_NAMESERVER_ADDR" in detail and f"{dev.namesrv};" in detail
    offsets = table(detail.split("#Consumer Offset#\n")[1])
    assert sorted(r["Consumer Offset"] for r in offsets if r["Topic"] == TOPIC) == ["2", "2"]
    status = table(detail.split("#Consumer RT&TPS#\n")[1])
    assert {r["Topic"] for r in status} == {TOPIC, f"%RETRY%{GROUP}"}
    assert [r["ConsumeFailed Msgs"] for r in status if r["Topic"] == TOPIC] == ["0"]


def test_consume_message_directly_prints_the_listeners_verdict(dev: DevServer, live: ConsumerThread) -> None:
    sent = table(ok(dev, "sendMessage", "-t", TOPIC, "-p", "direct", "-b", dev.broker_name, "-i", "0"))
    eventually(lambda: "direct" in live.bodies, timeout=20, message="the consumer did not get the message")
    client_id = table(ok(dev, "consumerStatus", "-g", GROUP))[0]["ClientId"]

    out = ok(dev, "consumeMessageDirectly", "-g", GROUP, "-d", client_id, "-i", sent[0]["Offset MsgId"])
    assert "CR_SUCCESS" in out
    assert live.bodies.count("direct") == 2  # consumed normally, then once more on request


def test_consume_message_directly_for_an_unknown_client_fails_with_the_brokers_remark(dev: DevServer) -> None:
    create_topic(dev, TOPIC, 2)
    sent = table(ok(dev, "sendMessage", "-t", TOPIC, "-p", "nobody", "-b", dev.broker_name, "-i", "0"))
    code, out, err = admin(dev, "consumeMessageDirectly", "-g", GROUP, "-d", "1.2.3.4@nobody", "-i",
                           sent[0]["Offset MsgId"])
    assert code == 1 and "not online" in err + out
