"""The console's JSON API against a real `orbitmq dev`: every path the OpenAPI document lists answers
with the documented shape, the document lists every route the server has, and the API agrees with
what the admin CLI and the clients see."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import jsonschema
import pytest

from orbitmq.client import ConsumeResult, Message, Producer, PushConsumer
from orbitmq.console.app import ConsoleSettings, make_app
from tests.console.conftest import DevWithConsole

pytestmark = pytest.mark.timeout(120)

TOPIC = "ConsoleApiTopic"
GROUP = "ConsoleApiGroup"


def check(doc: dict[str, Any], path: str, method: str, status: int, body: Any) -> None:
    """Validate `body` against the documented answer of `method path` for `status`."""
    responses = doc["paths"][path][method]["responses"]
    answer = responses.get(str(status)) or responses["default"]
    schema = next(iter(answer["content"].values()))["schema"]
    jsonschema.validate(body, {**schema, "components": doc["components"]})


async def wait_for(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.2)


def test_document_lists_every_route_of_the_server() -> None:
    from orbitmq.console.openapi import openapi_document

    app = make_app(ConsoleSettings(["127.0.0.1:1"]))
    served = {
        (route.resource.canonical, route.method.lower())
        for route in app.router.routes()
        if route.resource is not None and route.resource.canonical.startswith("/api/")
        and route.method not in ("HEAD",)
    }
    documented = {(path, method) for path, ops in openapi_document()["paths"].items() for method in ops}
    documented.add(("/api/openapi.json", "get"))
    assert served == documented


async def test_every_documented_path_answers_with_its_documented_shape(dev_console: DevWithConsole) -> None:
    url = dev_console.url
    got: list[Message] = []
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{url}/api/openapi.json") as r:
            assert r.status == 200
            doc = await r.json()

        async def call(method: str, path: str, concrete: str, json: Any = None, params: Any = None,
                       status: int = 200) -> Any:
            async with http.request(method.upper(), url + concrete, json=json, params=params) as r:
                body = await r.json()
                assert r.status == status, body
                check(doc, path, method, r.status, body)
                seen.add((path, method))
                return body

        seen: set[tuple[str, str]] = set()
        await call("put", "/api/topics/{topic}", f"/api/topics/{TOPIC}",
                   json={"readQueueNums": 2, "writeQueueNums": 2, "perm": 6})
        async with Producer("ConsoleApiProducer", namesrv_addr=dev_console.namesrv,
                            heartbeat_broker_interval_ms=200) as producer:
            sent = await producer.send(Message(TOPIC, b'{"n": 1}', tags="T", keys=["api-key-1"]))
            async def heartbeat_seen() -> bool:
                async with http.get(f"{url}/api/producers/ConsoleApiProducer") as r:
                    return bool((await r.json())["items"])
            await wait_for(heartbeat_seen)
            online = await call("get", "/api/producers/{group}", "/api/producers/ConsoleApiProducer")
            assert [p["brokerName"] for p in online["items"]] == ["broker-a"] and online["items"][0]["clientId"]
            nobody = await call("get", "/api/producers/{group}", "/api/producers/NoSuchProducerGroup")
            assert nobody["items"] == []

        def listener(msgs: list[Any]) -> ConsumeResult:
            got.extend(msgs)
            return ConsumeResult.CONSUME_SUCCESS

        consumer = PushConsumer(GROUP, namesrv_addr=dev_console.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(TOPIC, "*")
        consumer.register_listener(listener)
        await consumer.start()
        try:
            async def consumed() -> bool:
                return bool(got)
            await wait_for(consumed)

            cluster = await call("get", "/api/cluster", "/api/cluster")
            assert [b["role"] for b in cluster["brokers"]] == ["MASTER"]
            assert cluster["brokers"][0]["runtime"]["brokerVersionDesc"]
            topics = await call("get", "/api/topics", "/api/topics", params={"q": "ConsoleApi", "kind": "normal", "size": "5"})
            assert topics["items"] == [{"topic": TOPIC, "kind": "normal"}]
            topic = await call("get", "/api/topics/{topic}", f"/api/topics/{TOPIC}")
            assert topic["messages"] == 1 and len(topic["queues"]) == 2

            async def online() -> bool:
                async with http.get(f"{url}/api/groups/{GROUP}") as r:
                    g = await r.json()
                return r.status == 200 and len(g["clients"]) == 1 and g["queues"] != [] and g["lag"] == 0
            await wait_for(online)
            groups = await call("get", "/api/groups", "/api/groups", params={"q": GROUP})
            assert [g["group"] for g in groups["items"]] == [GROUP]
            group = await call("get", "/api/groups/{group}", f"/api/groups/{GROUP}")
            assert group["subscriptions"][TOPIC] == "*" and group["clients"][0]["clientId"]

            page = await call("get", "/api/messages", "/api/messages", params={"topic": TOPIC, "size": "10"})
            assert page["total"] == 1 and page["items"][0]["msgId"] == sent.msg_id
            by_key = await call("get", "/api/messages", "/api/messages", params={"topic": TOPIC, "key": "api-key-1"})
            assert [m["msgId"] for m in by_key["items"]] == [sent.msg_id]
            by_id = await call("get", "/api/messages", "/api/messages", params={"topic": TOPIC, "msgId": sent.msg_id})
            assert by_id["items"][0]["bodyText"] == '{"n": 1}'
            by_offset_id = await call("get", "/api/messages", "/api/messages",
                                      params={"topic": TOPIC, "msgId": sent.offset_msg_id})
            assert by_offset_id["items"][0]["keys"] == ["api-key-1"]
            trace = await call("get", "/api/messages/{msgId}/trace", f"/api/messages/{sent.msg_id}/trace")
            assert trace["items"] == []  # this producer did not trace
            resent = await call("post", "/api/messages/{offsetMsgId}/resend",
                                f"/api/messages/{sent.offset_msg_id}/resend", json={"group": GROUP})
            assert resent["result"]["consumeResult"] == "CR_SUCCESS"

            reset = await call("post", "/api/groups/{group}/reset-offset", f"/api/groups/{GROUP}/reset-offset",
                               json={"topic": TOPIC, "timestamp": 0})
            assert sorted(o["offset"] for o in reset["offsets"]) == [0, 0]
            skipped = await call("post", "/api/groups/{group}/reset-offset", f"/api/groups/{GROUP}/reset-offset",
                                 json={"topic": TOPIC, "skipBacklog": True})
            assert sum(o["offset"] for o in skipped["offsets"]) == 1
        finally:
            await consumer.shutdown()

        dlq = await call("get", "/api/dlq/{group}", f"/api/dlq/{GROUP}")
        assert dlq["total"] == 0 and dlq["items"] == []
        none = await call("post", "/api/dlq/{group}/resend", f"/api/dlq/{GROUP}/resend", json={"msgIds": []})
        assert none == {"matched": 0, "resent": 0, "skipped": 0, "targets": {}}
        async with http.get(f"{url}/api/dlq/{GROUP}/export") as r:
            assert r.status == 200 and r.headers["Content-Type"].startswith("application/x-ndjson")
            assert await r.read() == b""
            seen.add(("/api/dlq/{group}/export", "get"))
        acl = await call("get", "/api/acl", "/api/acl")
        assert "ACL is not enabled" in acl["brokers"][0]["error"]
        session = await call("get", "/api/session", "/api/session")
        assert session["loginRequired"] is False
        await call("post", "/api/login", "/api/login", json={"accessKey": "a", "secretKey": "12345678"},
                   status=400)
        await call("post", "/api/logout", "/api/logout")
        await call("delete", "/api/topics/{topic}", f"/api/topics/{TOPIC}")
        await call("get", "/api/topics/{topic}", f"/api/topics/{TOPIC}", status=404)

    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert seen == documented


async def test_bad_input_gets_a_clear_error_and_the_server_stays_up(dev_console: DevWithConsole) -> None:
    url = dev_console.url
    async with aiohttp.ClientSession() as http:
        cases = [
            ("GET", "/api/topics/bad%20name", None, 400, "topic"),
            ("GET", "/api/topics", None, 400, "size"),
            ("PUT", "/api/topics/GoodName", {"readQueueNums": 0}, 400, "readQueueNums"),
            ("PUT", "/api/topics/GoodName", [1], 400, "JSON object"),
            ("POST", "/api/groups/G/reset-offset", {"topic": "T", "timestamp": "yesterday"}, 400, "timestamp"),
            ("GET", "/api/messages?topic=NoSuchTopicHere", None, 404, ""),
        ]
        for method, path, body, status, words in cases:
            params = {"size": "1000"} if path == "/api/topics" else None
            async with http.request(method, url + path, json=body, params=params) as r:
                answer = await r.json()
                assert r.status == status, (path, answer)
                assert words in answer["error"]
                assert "Traceback" not in answer["error"]
        async with http.post(f"{url}/api/groups/G/reset-offset", data='{"topic": "T", "skipBacklog": true}',
                             headers={"Content-Type": "text/plain"}) as r:
            assert r.status == 415  # what a form or no-cors fetch of another site could send
        async with http.get(f"{url}/api/cluster") as r:
            assert r.status == 200
