"""A broker killed with SIGKILL and restarted: producers and consumers carry on, nothing is lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from orbitmq.client import ConsumeFromWhere, Message, Producer, PushConsumer
from orbitmq.errors import OrbitMQError
from tests.client.helpers import Collector, create_topic, wait_until
from tests.support.dev import start_dev, steady_port

pytestmark = pytest.mark.timeout(120)


async def test_clients_resume_after_the_broker_is_killed_and_restarted(tmp_path: Path) -> None:
    # Ports outside the kernel's ephemeral range: while the broker is down, no client connection
    # can take them, so the restart binds them again.
    ports = {"namesrv_port": steady_port(), "broker_port": steady_port()}
    server = start_dev(tmp_path, **ports)
    namesrv = server.namesrv
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

                server.process.kill()
                server = start_dev(tmp_path, **ports)

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
