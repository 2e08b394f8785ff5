"""The official RocketMQ 5 clients (Python rocketmq-python-client, Node.js rocketmq-client-nodejs)
against `orbitmq dev`'s gRPC front, and 4.x clients on the same cluster.

The Python client runs in child processes (rocketmq5_py.py: its generated modules and OrbitMQ's
cannot share one process); the Node.js client runs rocketmq5_node.js. Each scenario is bounded.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from orbitmq.client import LitePullConsumer, Message, Producer
from orbitmq.client.transaction_producer import LocalTransactionState, TransactionProducer
from tests.client.helpers import create_topic
from tests.support.dev import unique_names
from tests.support.procs import ServerProcess, eventually, orbitmq_command, start_server

# Not imported here: its apache.rocketmq.v2 modules would clash with OrbitMQ's in this process.
if importlib.util.find_spec("rocketmq") is None:
    pytest.skip("rocketmq-python-client is not installed (the test extra)", allow_module_level=True)

pytestmark = [pytest.mark.interop, pytest.mark.timeout(120)]

HERE = Path(__file__).resolve().parent
PY_SCRIPT = HERE / "rocketmq5_py.py"
NODE_SCRIPT = HERE / "rocketmq5_node.js"

#: Half messages are checked one second after they were born, every second.
CONF = "transactionTimeOut=1000\ntransactionCheckInterval=1000\n"


class Cluster:
    def __init__(self, process: ServerProcess, root: Path) -> None:
        self.process = process
        self.root = root
        self.namesrv = process.addresses[0]
        line = next(x for x in process.output if x.startswith("proxy listening on "))
        self.proxy = line.split()[-1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("rocketmq5")
    (root / "broker.conf").write_text(CONF)
    process = start_server(orbitmq_command(
        "dev", "--store", str(root / "store"), "--namesrv-port", "0", "--broker-port", "0", "--host", "127.0.0.1",
        "--console", "off", "--no-metrics", "--grpc-port", "0", "-c", str(root / "broker.conf"),
    ), listeners=2, cwd=str(root))
    try:
        eventually(lambda: any(x.startswith("proxy listening on ") for x in process.output), timeout=30)
        yield Cluster(process, root)
    finally:
        process.stop()


def run_py(cluster: Cluster, scenario: str, topic: str, group: str = "", n: int = 1, timeout: float = 90) -> Any:
    env = dict(os.environ, HOME=str(cluster.root))  # the client logs under ~/logs
    done = subprocess.run([sys.executable, str(PY_SCRIPT), scenario, cluster.proxy, topic, group, str(n)],
                          capture_output=True, text=True, timeout=timeout, env=env, cwd=str(cluster.root), check=False)
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"{scenario} failed:\n{done.stdout}\n{done.stderr[-4000:]}"
    return json.loads(lines[-1][len("RESULT "):])


async def make_topic(cluster: Cluster, topic: str, queues: int = 4) -> None:
    async with Producer("make_topic_pg", namesrv_addr=cluster.namesrv) as producer:
        await create_topic(producer, topic, queues)


async def pull_all(cluster: Cluster, topic: str, group: str, n: int, timeout: float = 30,
                   then: float = 0.0) -> list[Any]:
    """Poll until n messages came (at most timeout s), then `then` s more to catch any extra one."""
    consumer = LitePullConsumer(group, namesrv_addr=cluster.namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(topic, "*")
    await consumer.start()
    got: list[Any] = []
    try:
        end = time.monotonic() + timeout
        while len(got) < n and time.monotonic() < end:
            got.extend(await consumer.poll(timeout=2) or [])
        end = time.monotonic() + then
        while time.monotonic() < end:
            got.extend(await consumer.poll(timeout=1) or [])
    finally:
        await consumer.shutdown()
    return got


# --- 5.x producers -----------------------------------------------------------------------------------


async def test_a_5x_producer_is_read_by_a_4x_consumer(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    ids = await asyncio.to_thread(run_py, cluster, "send", topic, "", 3)
    got = await pull_all(cluster, topic, cg, 3)
    assert sorted(m.unique_key for m in got) == sorted(ids)
    m = got[0]
    assert m.tags == "TagA" and m.keys == ["k1"] and m.get_user_property("color") == "blue"


async def test_transaction_commit_and_rollback(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    committed = await asyncio.to_thread(run_py, cluster, "tx_commit", topic)
    rolled = await asyncio.to_thread(run_py, cluster, "tx_rollback", topic)
    assert committed["tx"] and rolled["tx"]
    got = await pull_all(cluster, topic, cg, 1)
    assert [m.body for m in got] == [b"tx_commit"]
    # The rolled-back one never shows up, even after the broker's checks ran.
    more = await pull_all(cluster, topic, cg + "_late", 1, then=4)
    assert [m.body for m in more] == [b"tx_commit"]


async def test_an_orphaned_transaction_is_resolved_through_telemetry(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    report = await asyncio.to_thread(run_py, cluster, "tx_orphan", topic)
    assert report["checked"] and report["checked"][0] == report["id"]
    assert report["committed"] == [report["id"]]
    got = await pull_all(cluster, topic, cg, 1)
    assert [m.unique_key for m in got] == [report["id"]]


async def test_fifo_messages_of_a_group_land_in_one_queue_in_order(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic, queues=8)
    await asyncio.to_thread(run_py, cluster, "send_fifo", topic, "", 4)
    got = await pull_all(cluster, topic, cg, 12)
    by_group: dict[str, list[tuple[int, int, str]]] = {}
    for m in got:
        by_group.setdefault(m.properties["__SHARDINGKEY"], []).append((m.queue_id, m.queue_offset, m.body.decode()))
    assert sorted(by_group) == ["ga", "gb", "gc"]
    for g, items in by_group.items():
        assert len({q for q, _, _ in items}) == 1, f"group {g} spread over queues"
        assert [b for _, _, b in sorted(items)] == [f"{g}:{i}" for i in range(4)]


async def test_a_delayed_message_waits_for_its_time(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    report = await asyncio.to_thread(run_py, cluster, "send_delay", topic, "", 3)
    got = await pull_all(cluster, topic, cg, 1, timeout=40)
    assert [m.unique_key for m in got] == [report["id"]]
    assert got[0].store_timestamp >= report["at"] * 1000 - 1000


async def test_a_timed_message_is_recalled_before_it_is_due(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    report = await asyncio.to_thread(run_py, cluster, "recall", topic)
    assert report["handle"] and report["recalled"] == report["id"]
    got = await pull_all(cluster, topic, cg, 1, timeout=40)  # the marker, due a second after the recalled one
    assert [m.unique_key for m in got] == [report["marker"]]


# --- 4.x producer to 5.x consumer and the consumers (need the broker's POP codes) -------------------


async def test_a_4x_producer_is_read_by_a_5x_simple_consumer(cluster: Cluster) -> None:
    topic, pg, cg = unique_names("g5")
    await make_topic(cluster, topic)
    # A new group starts at the end of each queue: let the consumer join first (an empty receive).
    await asyncio.to_thread(run_py, cluster, "receive", topic, cg, 0)
    async with Producer(pg, namesrv_addr=cluster.namesrv) as producer:
        sent = []
        for _ in range(2):
            msg = Message(topic, b"from 4.x", tags="T4", keys=["key4"])
            msg.put_user_property("origin", "4x")
            sent.append(await producer.send(msg))
        big = await producer.send(Message(topic, b"z" * 6000))  # compressed by the 4.x producer (over 4 KiB)
        tp = TransactionProducer(pg + "_tx", _Commit(), namesrv_addr=cluster.namesrv)
        await tp.start()
        try:
            await tp.send_message_in_transaction(Message(topic, b"tx from 4.x"), None)
        finally:
            await tp.shutdown()
    got = await asyncio.to_thread(run_py, cluster, "receive", topic, cg, 4)
    assert sorted(m["body"] for m in got) == ["from 4.x", "from 4.x", "tx from 4.x", "z" * 6000]
    assert [m["id"] for m in got if m["body"] == "z" * 6000] == [big.msg_id]
    plain = [m for m in got if m["body"] == "from 4.x"]
    assert sorted(m["id"] for m in plain) == sorted(r.msg_id for r in sent)
    assert plain[0]["tag"] == "T4" and plain[0]["keys"] == ["key4"] and plain[0]["props"] == {"origin": "4x"}
    assert all(m["attempt"] == 1 for m in got)


class _Commit:
    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: Any) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


async def test_simple_consumer_receives_and_acks(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    report = await asyncio.to_thread(run_py, cluster, "simple_roundtrip", topic, cg, 5)
    assert sorted(m["id"] for m in report["got"]) == sorted(report["sent"])
    m = report["got"][0]
    assert m["tag"] == "TagA" and m["keys"] == ["k1"] and m["props"] == {"color": "blue"} and m["attempt"] == 1
    # Acked: a second consumer of the group gets nothing more.
    assert await asyncio.to_thread(run_py, cluster, "receive", topic, cg, 0) == []


async def test_fifo_order_per_group_for_a_simple_consumer(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await _fifo_topic(cluster, topic)
    await _orderly_group(cluster, topic, cg)
    got = await asyncio.to_thread(run_py, cluster, "fifo_roundtrip", topic, cg, 3)
    for g in ("ga", "gb", "gc"):
        assert [m["body"] for m in got if m["group"] == g] == [f"{g}:{i}" for i in range(3)]


async def test_an_orderly_group_takes_a_batch_at_a_time_and_a_plain_one_reads_concurrently(cluster: Cluster) -> None:
    """FIFO consumption is the group's consumeMessageOrderly, as in RocketMQ 5: on one FIFO topic the orderly
    group gets nothing more of a message group's queue until its batch is acked; a group without the flag
    reads on regardless."""
    topic, _, cg = unique_names("g5")
    plain = cg + "_plain"
    await _fifo_topic(cluster, topic)
    await _orderly_group(cluster, topic, cg)
    report = await asyncio.to_thread(run_py, cluster, "fifo_batches", topic, f"{cg},{plain}", 6)
    orderly, concurrent = report[cg], report[plain]
    bodies = [f"ga:{i}" for i in range(6)]
    assert orderly["second"] == [] and orderly["first"]
    assert [m["body"] for m in orderly["first"] + orderly["rest"]] == bodies
    assert concurrent["second"]  # a second batch while the first is un-acked
    assert sorted(m["body"] for m in concurrent["first"] + concurrent["second"] + concurrent["rest"]) == bodies


async def test_delayed_delivery_to_a_simple_consumer(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    report = await asyncio.to_thread(run_py, cluster, "delay_roundtrip", topic, cg, 3)
    assert len(report["got"]) == 1 and report["got"][0]["body"] == "later"
    assert report["received_at"] >= report["at"] - 1


async def test_invisible_time_expires_and_the_message_comes_back(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    first, again = await asyncio.to_thread(run_py, cluster, "redeliver", topic, cg)
    assert first["id"] == again["id"]
    assert (first["attempt"], again["attempt"]) == (1, 2)


async def test_push_consumer(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    got = await asyncio.to_thread(run_py, cluster, "push", topic, cg, 4)
    assert sorted(m["body"] for m in got) == [f"m{i}" for i in range(4)]


async def test_fifo_order_per_group_for_a_push_consumer(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await _fifo_topic(cluster, topic)
    await _orderly_group(cluster, topic, cg)
    report = await asyncio.to_thread(run_py, cluster, "push_fifo", topic, cg, 4)
    assert report["fifo"] is True  # the Settings told the client to consume in order
    got = report["got"]
    for g in ("ga", "gb", "gc"):
        assert [m["body"] for m in got if m["group"] == g] == [f"{g}:{i}" for i in range(4)]


async def test_retries_end_in_the_dead_letter_queue(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    await _group(cluster, cg, retry_max_times=1)
    report = await asyncio.to_thread(run_py, cluster, "nack_to_dlq", topic, cg, 2)
    assert report["attempts"] == [1, 2] and report["after"] == 0
    dlq = await pull_all(cluster, f"%DLQ%{cg}", cg + "_dlq_reader", 1)
    assert [m.body for m in dlq] == [b"m0"]


async def test_an_orderly_push_consumer_follows_its_groups_retry_policy_to_the_dlq(cluster: Cluster) -> None:
    """RocketMQ 5: the Settings carry the group's retryMaxTimes + 1 and retry policy; an orderly group's
    PushConsumer retries locally that many times (1 s apart here) and then forwards the message to the DLQ."""
    topic, _, cg = unique_names("g5")
    await make_topic(cluster, topic)
    await _orderly_group(cluster, topic, cg, "-r", "1", "-p",
                         '{"type":"CUSTOMIZED","customizedRetryPolicy":{"next":[1000]}}')
    report = await asyncio.to_thread(run_py, cluster, "push_fifo_fail", topic, cg, 2)
    assert report == {"fifo": True, "calls": 2}
    dlq = await pull_all(cluster, f"%DLQ%{cg}", cg + "_dlq_reader", 1)
    assert [m.body for m in dlq] == [b"m0"]


async def _admin(*args: str) -> None:
    done = await asyncio.to_thread(subprocess.run, orbitmq_command("admin", *args), capture_output=True, text=True,
                                   timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr


async def _group(cluster: Cluster, group: str, *, retry_max_times: int = 16) -> None:
    await _admin("updateSubGroup", "-n", cluster.namesrv, "-c", "DefaultCluster", "-g", group,
                 "-r", str(retry_max_times))


async def _orderly_group(cluster: Cluster, topic: str, group: str, *more: str) -> None:
    """A consumer group with RocketMQ 5's consumeMessageOrderly (what makes consumption FIFO), once the
    proxy (which reads the brokers' group tables every few seconds) assigns it every queue of `topic`."""
    from orbitmq.proxy.pb import service_pb2 as spb
    from orbitmq.proxy.pb import service_pb2_grpc as sgrpc

    await _admin("updateSubGroup", "-n", cluster.namesrv, "-c", "DefaultCluster", "-g", group, "-o", "true", *more)
    request = spb.QueryAssignmentRequest()
    request.topic.name, request.group.name = topic, group
    async with grpc.aio.insecure_channel(cluster.proxy) as channel:
        stub = sgrpc.MessagingServiceStub(channel)

        async def per_queue() -> bool:
            answer = await stub.QueryAssignment(request, metadata=[("x-mq-client-id", "interop@1")], timeout=10)
            return bool(answer.assignments) and all(a.message_queue.id >= 0 for a in answer.assignments)

        deadline = time.monotonic() + 20
        while not await per_queue() and time.monotonic() < deadline:
            pass
        assert await per_queue(), f"the proxy does not see {group} as orderly"


async def _fifo_topic(cluster: Cluster, topic: str) -> None:
    await _admin("updateTopic", "-n", cluster.namesrv, "-c", "DefaultCluster", "-t", topic, "-r", "4", "-w", "4",
                 "-a", "+message.type=FIFO")


def test_admin_lists_a_5x_consumer(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5")
    asyncio.run(make_topic(cluster, topic))
    env = dict(os.environ, HOME=str(cluster.root))
    child = subprocess.Popen([sys.executable, str(PY_SCRIPT), "linger", cluster.proxy, topic, cg],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(cluster.root))
    try:
        assert child.stdout is not None
        ready = child.stdout.readline()
        assert ready.startswith("READY "), ready
        client_id = ready.split()[1]

        def listed() -> bool:
            done = subprocess.run(orbitmq_command("admin", "consumerConnection", "-n", cluster.namesrv, "-g", cg),
                                  capture_output=True, text=True, timeout=30, check=False)
            return client_id in done.stdout and "CONSUME_POP" in done.stdout

        eventually(listed, timeout=30, interval=1, message="the gRPC consumer is not listed")
        progress = subprocess.run(orbitmq_command("admin", "consumerProgress", "-n", cluster.namesrv, "-g", cg),
                                  capture_output=True, text=True, timeout=30, check=False)
        assert progress.returncode == 0 and topic in progress.stdout, progress.stdout + progress.stderr
        child.communicate("", timeout=30)  # the client shuts down: NotifyClientTermination
        eventually(lambda: not listed(), timeout=30, interval=1, message="the gRPC consumer is still listed")
    finally:
        if child.poll() is None:
            child.kill()


def test_admin_lists_a_5x_producer_under_its_topic(cluster: Cluster) -> None:
    topic, _, _ = unique_names("g5")
    asyncio.run(make_topic(cluster, topic))
    env = dict(os.environ, HOME=str(cluster.root))
    child = subprocess.Popen([sys.executable, str(PY_SCRIPT), "linger_producer", cluster.proxy, topic],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(cluster.root))
    try:
        assert child.stdout is not None
        ready = child.stdout.readline()
        assert ready.startswith("READY "), ready
        client_id = ready.split()[1]

        def listed() -> bool:
            done = subprocess.run(orbitmq_command("admin", "producerConnection", "-n", cluster.namesrv, "-g", topic,
                                                  "-t", topic), capture_output=True, text=True, timeout=30, check=False)
            return client_id in done.stdout

        eventually(listed, timeout=30, interval=1, message="the gRPC producer is not listed")
    finally:
        child.communicate("", timeout=30)
        if child.poll() is None:
            child.kill()


# --- the Node.js client ---------------------------------------------------------------------------


def run_node(cluster: Cluster, scenario: str, topic: str, group: str = "", n: int = 1) -> Any:
    node = shutil.which("node")
    if node is None or not (HERE / "node_modules" / "rocketmq-client-nodejs" / "package.json").exists():
        pytest.skip("node or rocketmq-client-nodejs is not installed (./run test installs them)")
    done = subprocess.run([node, str(NODE_SCRIPT), scenario, cluster.proxy, topic, group, str(n)],
                          capture_output=True, text=True, timeout=90, cwd=str(HERE), check=False,
                          env=dict(os.environ, HOME=str(cluster.root)))
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout + done.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT "):])


async def test_the_nodejs_client_sends_and_receives(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5n")
    await make_topic(cluster, topic)
    report = await asyncio.to_thread(run_node, cluster, "simple", topic, cg, 3)
    assert sorted(report["got"]) == sorted(report["sent"])


async def test_nodejs_fifo_order_per_group(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5n")
    await _fifo_topic(cluster, topic)
    await _orderly_group(cluster, topic, cg)
    got = await asyncio.to_thread(run_node, cluster, "fifo", topic, cg, 3)
    for g in ("ga", "gb"):
        assert [m["body"] for m in got if m["group"] == g] == [f"{g}:{i}" for i in range(3)]


async def test_nodejs_push_consumer(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5n")
    await make_topic(cluster, topic)
    got = await asyncio.to_thread(run_node, cluster, "push", topic, cg, 3)
    assert sorted(got) == [f"push {i}" for i in range(3)]


async def test_nodejs_transactions(cluster: Cluster) -> None:
    topic, _, cg = unique_names("g5n")
    await make_topic(cluster, topic)
    report = await asyncio.to_thread(run_node, cluster, "tx", topic)
    got = await pull_all(cluster, topic, cg, 1)
    assert [(m.unique_key, m.body) for m in got] == [(report["committed"], b"node commit")]
    more = await pull_all(cluster, topic, cg + "_late", 1, then=4)
    assert [m.body for m in more] == [b"node commit"]
