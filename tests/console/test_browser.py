"""The console in a real browser: headless Chromium (Debian's `chromium`) driven by Playwright,
against `orbitmq dev` with real data. Screenshots go to the test's temp folder.

One walk through the pages: cluster, create a topic, send a traced message, find it by key with
its trace, let a consumer fail it into the DLQ, resend it from the DLQ and see it consumed.
"""

from __future__ import annotations

import json
import os
import threading
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from orbitmq.client import ConsumeResult, Message
from tests.console.conftest import start_dev
from tests.support.procs import eventually

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

TOPIC = "BrowserTopic"
GROUP = "BrowserGroup"
KEY = "order-42"


def _playwright() -> Any:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} is not installed (./run test installs Debian's chromium package)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("the playwright package is not installed (pip install -e '.[test]')")
    return sync_playwright


def api(url: str, path: str, **params: str) -> Any:
    query = ("?" + urllib.parse.urlencode(params)) if params else ""
    with urllib.request.urlopen(f"{url}{path}{query}", timeout=10) as r:
        return json.loads(r.read())


def test_walk_through_the_console_in_chromium(tmp_path: Path) -> None:
    sync_playwright = _playwright()
    from playwright.sync_api import expect

    from orbitmq.client.sync import Producer, PushConsumer

    shots = tmp_path / "screenshots"
    shots.mkdir()
    dev = start_dev(tmp_path)
    failing = threading.Event()
    failing.set()
    consumed: list[tuple[str, int]] = []
    consumer = producer = None
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(20_000)
                page.on("dialog", lambda dialog: dialog.accept())
                url = dev.url

                # Cluster: the broker, its role and version; the live chart is drawn.
                page.goto(f"{url}/#/cluster")
                expect(page.get_by_role("heading", name="Cluster")).to_be_visible()
                expect(page.get_by_role("cell", name="MASTER")).to_be_visible()
                expect(page.get_by_role("cell", name="broker-a", exact=True)).to_be_visible()
                page.keyboard.press("Tab")
                assert page.evaluate("document.activeElement.textContent") == "Skip to content"
                page.screenshot(path=str(shots / "cluster.png"), full_page=True)

                # Topics: create one through the form.
                page.get_by_role("link", name="Topics", exact=True).click()
                form = page.locator("#create-topic")
                form.get_by_label("Topic").fill(TOPIC)
                form.get_by_label("Read queues").fill("2")
                form.get_by_label("Write queues").fill("2")
                form.get_by_role("button", name="Save topic").click()
                expect(page.get_by_role("heading", name=f"Topic {TOPIC}")).to_be_visible()
                expect(page.locator("table").nth(2).locator("tbody tr")).to_have_count(2)
                page.screenshot(path=str(shots / "topic.png"), full_page=True)
                assert api(url, f"/api/topics/{TOPIC}")["queueDatas"][0]["writeQueueNums"] == 2

                # A traced send, and a consumer that fails the message straight into the DLQ.
                producer = Producer("BrowserProducer", namesrv_addr=dev.namesrv, enable_msg_trace=True,
                                    heartbeat_broker_interval_ms=200)
                producer.start()
                sent = producer.send(Message(TOPIC, b'{"order": 42, "item": "book"}', tags="TagA", keys=[KEY]))

                def listener(msgs: list[Any]) -> ConsumeResult:
                    if failing.is_set():
                        return ConsumeResult.RECONSUME_LATER
                    consumed.extend((m.keys[0] if m.keys else "", m.reconsume_times) for m in msgs)
                    return ConsumeResult.CONSUME_SUCCESS

                consumer = PushConsumer(GROUP, namesrv_addr=dev.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                                        max_reconsume_times=0, enable_msg_trace=True)
                consumer.subscribe(TOPIC, "*")
                consumer.register_listener(listener)
                consumer.start()
                eventually(lambda: api(url, f"/api/dlq/{GROUP}")["total"] == 1, timeout=60,
                           message="the failed message did not reach the DLQ")
                eventually(lambda: any(t["type"] == "Pub" for t in
                                       api(url, f"/api/messages/{sent.msg_id}/trace")["items"]), timeout=30,
                           message="no trace record of the send")

                # Messages: find it by key (keyboard: Enter submits), see body as JSON and hex, and its trace.
                page.get_by_role("link", name="Messages", exact=True).click()
                search = page.locator("#message-search")
                search.get_by_label("Topic").fill(TOPIC)
                search.get_by_label("Search by").select_option("key")
                search.get_by_label("Key / ID").fill(KEY)
                search.get_by_label("Key / ID").press("Enter")
                detail = page.locator("#message-detail")
                expect(detail.get_by_role("heading", name=f"Message {sent.msg_id}")).to_be_visible()
                expect(page.locator("#body")).to_contain_text('"item": "book"')
                detail.get_by_role("tab", name="JSON").click()
                expect(page.locator("#body")).to_contain_text('"order": 42')
                detail.get_by_role("tab", name="Hex").click()
                expect(page.locator("#body")).to_contain_text("7b 22 6f 72")
                trace = page.locator("#trace")
                expect(trace.get_by_role("cell", name="Pub", exact=True)).to_be_visible()
                expect(trace.get_by_role("cell", name="BrowserProducer")).to_be_visible()
                page.screenshot(path=str(shots / "message.png"), full_page=True)

                # Consumer group: the online client and its lag.
                page.goto(f"{url}/#/group?name={GROUP}")
                expect(page.get_by_role("heading", name=f"Consumer group {GROUP}")).to_be_visible()
                client_id = api(url, f"/api/groups/{GROUP}")["clients"][0]["clientId"]
                expect(page.get_by_role("cell", name=client_id)).to_be_visible()
                page.screenshot(path=str(shots / "group.png"), full_page=True)

                # Producers: the traced producer's connection.
                eventually(lambda: api(url, "/api/producers/BrowserProducer")["items"] != [], timeout=30)
                page.get_by_role("link", name="Producers", exact=True).click()
                page.get_by_label("Producer group").fill("BrowserProducer")
                page.get_by_label("Producer group").press("Enter")
                expect(page.get_by_role("cell", name="broker-a", exact=True)).to_be_visible()

                # Dead letters: the message is there; resend it and see the consumer take it.
                page.get_by_role("navigation").get_by_role("link", name="Dead letters").click()
                page.get_by_label("Consumer group").fill(GROUP)
                page.get_by_role("button", name="Show").click()
                expect(page.get_by_text(f"1 dead letter(s) in %DLQ%{GROUP}")).to_be_visible()
                expect(page.get_by_role("cell", name=TOPIC, exact=True)).to_be_visible()
                page.screenshot(path=str(shots / "dlq.png"), full_page=True)
                failing.clear()
                page.get_by_role("button", name="Resend", exact=True).click()
                expect(page.locator("#status")).to_contain_text("Resent 1 of 1 dead letter(s), 0 skipped")
                expect(page.locator("#status")).to_contain_text(f"{sent.msg_id} to {TOPIC}")
                eventually(lambda: (KEY, 0) in consumed, timeout=30, message="the resent message was not consumed")
                expect(page.get_by_role("cell", name="yes", exact=True)).to_be_visible()  # flagged as resent
                page.get_by_role("button", name="Resend all").click()  # confirm() is accepted by the dialog handler
                expect(page.locator("#status")).to_contain_text("Resent 0 of 1 dead letter(s), 1 skipped")

                # Resend to a group: an online client of the group consumes the original once more.
                before = consumed.count((KEY, 0))
                page.goto(f"{url}/#/messages?topic={TOPIC}&mode=id&value={sent.msg_id}")
                detail = page.locator("#message-detail")
                detail.get_by_label("Group").fill(GROUP)
                detail.get_by_role("button", name="Resend").click()
                expect(page.locator("#status")).to_contain_text("CR_SUCCESS")
                eventually(lambda: consumed.count((KEY, 0)) > before, timeout=10)

                # Consumer group actions: reset to a time, then skip the backlog.
                page.goto(f"{url}/#/group?name={GROUP}")
                page.get_by_role("button", name="Reset to time").click()
                expect(page.locator("#status")).to_contain_text("Offsets reset.")
                # The subscription row and one lag row per queue of the topic.
                expect(page.get_by_role("cell", name=TOPIC, exact=True)).to_have_count(3)
                page.get_by_role("button", name="Skip backlog").click()
                expect(page.locator("#status")).to_contain_text("Backlog skipped.")

                # Dark mode and a phone-sized screen render the same page.
                page.emulate_media(color_scheme="dark")
                page.set_viewport_size({"width": 390, "height": 800})
                dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
                page.emulate_media(color_scheme="light")
                light = page.evaluate("getComputedStyle(document.body).backgroundColor")
                assert dark != light
                page.emulate_media(color_scheme="dark")
                page.screenshot(path=str(shots / "dlq-dark-phone.png"), full_page=True)
            finally:
                browser.close()
    finally:
        if consumer is not None:
            consumer.shutdown()
        if producer is not None:
            producer.shutdown()
        dev.server.stop()
    assert sorted(p.name for p in shots.iterdir()) == [
        "cluster.png", "dlq-dark-phone.png", "dlq.png", "group.png", "message.png", "topic.png"]


def test_login_page_and_a_read_only_account_in_chromium(tmp_path: Path) -> None:
    sync_playwright = _playwright()
    from playwright.sync_api import expect

    from tests.acl.conftest import ADMIN, CONSUMER, start_acl_dev
    from tests.console.conftest import console_url

    cluster = start_acl_dev(tmp_path, console="127.0.0.1:0")
    try:
        url = console_url(cluster.process)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1280, "height": 900})
                page.set_default_timeout(20_000)
                page.goto(f"{url}/#/topics")
                expect(page.get_by_role("heading", name="Log in")).to_be_visible()
                page.get_by_label("Access key").fill(ADMIN.access_key)
                page.get_by_label("Secret key").fill("wrongSecret1")
                page.get_by_label("Secret key").press("Enter")
                expect(page.locator("#status")).to_contain_text("refuse")

                page.get_by_label("Access key").fill(CONSUMER.access_key)
                page.get_by_label("Secret key").fill(CONSUMER.secret_key)
                page.get_by_role("button", name="Log in").click()
                expect(page.get_by_text(f"{CONSUMER.access_key} (read-only)")).to_be_visible()
                expect(page.get_by_role("heading", name="Topics")).to_be_visible()
                expect(page.get_by_role("button", name="Save topic")).to_be_disabled()
                page.screenshot(path=str(tmp_path / "read-only.png"), full_page=True)

                page.get_by_role("button", name="Log out").click()
                expect(page.get_by_role("heading", name="Log in")).to_be_visible()
                page.get_by_label("Access key").fill(ADMIN.access_key)
                page.get_by_label("Secret key").fill(ADMIN.secret_key)
                page.get_by_label("Secret key").press("Enter")
                expect(page.get_by_text(f"{ADMIN.access_key} (admin)")).to_be_visible()
                form = page.locator("#create-topic")
                form.get_by_label("Topic").fill("AclBrowserTopic")
                form.get_by_role("button", name="Save topic").click()
                expect(page.get_by_role("heading", name="Topic AclBrowserTopic")).to_be_visible()
                page.get_by_role("navigation").get_by_role("link", name="ACL").click()
                expect(page.get_by_role("cell", name=CONSUMER.access_key)).to_be_visible()
                expect(page.get_by_text(CONSUMER.secret_key)).to_have_count(0)
                page.screenshot(path=str(tmp_path / "acl.png"), full_page=True)
            finally:
                browser.close()
    finally:
        cluster.process.stop()
