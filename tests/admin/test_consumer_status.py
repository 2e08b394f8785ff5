"""consumerStatus and consumeMessageDirectly against a live PushConsumer, through the broker's forwarding."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

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


def test_consumer_status_files_each_clients_info_then_details_one(
        dev: DevServer, live: ConsumerThread, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ConsumerStatusSubCommand: without -i, each client's formatString() goes to <now>/<clientId>
    in the current directory and a line names the file; with -i, formatString() is printed."""
    for i in range(4):
        ok(dev, "sendMessage", "-t", TOPIC, "-p", f"status-{i}", "-b", dev.broker_name, "-i", str(i % 2))
    eventually(lambda: live.count() >= 4, timeout=20, message="the consumer did not get the 4 messages")

    clients = json.loads(ok(dev, "consumerStatus", "-g", GROUP, "--json"))
    assert len(clients) == 1
    assert (clients[0]["Consume Type"], clients[0]["Orderly"], clients[0]["Queues"]) == ("CONSUME_PASSIVELY", "false", 3)
    client_id = clients[0]["ClientId"]

    monkeypatch.chdir(tmp_path)
    lines = ok(dev, "consumerStatus", "-g", GROUP).split("\n")
    header = "%-10s %-40s %-20s %s"
    assert lines[0] == header % ("#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")
    index, listed_id, version, path = lines[1].split()
    assert (index, listed_id) == ("1", client_id) and re.fullmatch(r"V\d+_\d+_\d+(_SNAPSHOT)?|HIGHER_VERSION", version)
    assert re.fullmatch(r"\d{13}/" + re.escape(client_id), path)
    assert lines[2:6] == ["", "", "Same subscription in the same group of consumer", ""]
    assert lines[6] == "Rebalance OK"
    filed = (tmp_path / path).read_text()

    detail = ok(dev, "consumerStatus", "-g", GROUP, "-i", client_id)
    for text in (filed, detail):
        assert text.startswith("#Consumer Properties#\n")
        assert re.search(r"^PROP_NAMESERVER_ADDR +: " + re.escape(dev.namesrv), text, re.MULTILINE)
        offsets = text.split("#Consumer Offset#\n")[1].split("\n\n")[0].splitlines()[1:]
        assert sorted(line.split()[3] for line in offsets if line.split()[0] == TOPIC) == ["2", "2"]
        status = text.split("#Consumer RT&TPS#\n")[1].splitlines()[1:]
        assert {line.split()[0] for line in status} == {TOPIC, f"%RETRY%{GROUP}"}
        assert [line.split()[-1] for line in status if line.split()[0] == TOPIC] == ["0"]


def test_consume_message_directly_prints_the_listeners_verdict(dev: DevServer, live: ConsumerThread) -> None:
    sent = table(ok(dev, "sendMessage", "-t", TOPIC, "-p", "direct", "-b", dev.broker_name, "-i", "0"))
    eventually(lambda: "direct" in live.bodies, timeout=20, message="the consumer did not get the message")
    client_id = json.loads(ok(dev, "consumerStatus", "-g", GROUP, "--json"))[0]["ClientId"]

    out = ok(dev, "consumeMessageDirectly", "-g", GROUP, "-d", client_id, "-i", sent[0]["Offset MsgId"])
    assert "CR_SUCCESS" in out
    assert live.bodies.count("direct") == 2  # consumed normally, then once more on request


def test_consume_message_directly_for_an_unknown_client_fails_with_the_brokers_remark(dev: DevServer) -> None:
    create_topic(dev, TOPIC, 2)
    sent = table(ok(dev, "sendMessage", "-t", TOPIC, "-p", "nobody", "-b", dev.broker_name, "-i", "0"))
    code, out, err = admin(dev, "consumeMessageDirectly", "-g", GROUP, "-d", "1.2.3.4@nobody", "-i",
                           sent[0]["Offset MsgId"])
    assert code == 1 and "not online" in err + out
