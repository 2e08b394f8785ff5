"""A broker killed with SIGKILL and restarted: producers and consumers carry on, nothing is lost."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from orbitmq.client import ConsumeFromWhere, Message, Producer, PushConsumer
from orbitmq.errors import OrbitMQError
from tests.client.helpers import Collector, create_topic, wait_until
from tests.support.procs import ServerProcess, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(120)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_dev(store: Path, ns_port: int, broker_port: int) -> ServerProcess:
    return start_server(
        orbitmq_command("dev", "--store", str(store), "--namesrv-port", str(ns_port),
                        "--broker-port", str(broker_port), "--host", "127.0.0.1"),
        listeners=2,
    )


async def test_clients_resume_after_the_broker_is_killed_and_restarted(tmp_path: Path) -> None:
    ns_port, broker_port = free_port(), free_port()
    server = start_dev(tmp_path, ns_port, broker_port)
    namesrv = f"127.0.0.1:{ns_port}"
    collector = Collector()
    try:
        async with Producer("crash_pg", namesrv_addr=namesrv) as producer:
            await create_topic(producer, "CrashTopic", queues=2)
            consumer = PushConsumer("crash_cg", namesrv_addr=namesrv, instance_name="crash",
                                    consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
            consumer.subscribe("CrashTopic", "*")
            consumer.register_listener(collector)
            await consumer.start()
            try:
                for i in range(10):
                    await producer.send(Message("CrashTopic", f"before {i}".encode()))
                await wait_until(lambda: len(collector.bodies()) == 10)

                server.kill()
                server = start_dev(tmp_path, ns_port, broker_port)

                sent_after = 0
                while sent_after < 10:
                    try:
                        await producer.send(Message("CrashTopic", f"after {sent_after}".encode()))
                        sent_after += 1
                    except OrbitMQError:
                        await asyncio.sleep(0.2)  # the broker is still registering
                await wait_until(lambda: len(collector.bodies()) == 20, timeout=40)
            finally:
                await consumer.shutdown()
    finally:
        server.stop()
    assert collector.bodies() == {f"{w} {i}".encode() for w in ("before", "after") for i in range(10)}
