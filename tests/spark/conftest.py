"""Fixtures for the Spark connector: one local[2] SparkSession and one `orbitmq dev` per test session.

Spark start-up costs seconds, so both are session-scoped; each test uses its
own topics. The Spark JVM and the dev server are child processes stopped by
PID at the end.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.dev import DevServer, running_dev


def _spark_available() -> str | None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark/pyarrow are not installed (the 'spark' extra)"
    if shutil.which("java") is None:
        return "java is not installed"
    return None


#: Each Spark test's time bound. Spark runs a JVM and its Python workers on the machine's cores; when
#: they are busy, one streaming job takes minutes. A bound pytest must enforce in the middle of a
#: Py4J call leaves the shared session broken for every later Spark test, so it is set at a size
#: Spark meets on a loaded machine, while still stopping a hang.
SPARK_TEST_TIMEOUT_S = 600
#: How long a test waits for one Spark query or one streaming milestone.
SPARK_WAIT_S = 240


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("spark") is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SPARK_TEST_TIMEOUT_S))


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local[2] SparkSession on loopback with the orbitmq format registered."""
    reason = _spark_available()
    if reason:
        pytest.skip(reason)
    # Workers must run this interpreter (it has orbitmq and pyarrow), and
    # Spark must bind to loopback only.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    import orbitmq.spark

    session = (
        SparkSession.builder.master("local[2]")
        .appName("orbitmq-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    orbitmq.spark.register(session)
    gateway = SparkContext._gateway
    try:
        yield session
    finally:
        session.stop()
        proc = getattr(gateway, "proc", None)
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)


@dataclass
class GroupProcess:
    """A child in its own process group (a Spark driver and its JVM and workers), killed as one."""

    popen: subprocess.Popen[str]
    lines: list[str]

    @classmethod
    def start(cls, args: list[str]) -> GroupProcess:
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": root}
        popen = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=root,
                                 env=env, start_new_session=True)
        child = cls(popen, [])

        def pump() -> None:
            assert popen.stdout is not None
            for line in popen.stdout:
                child.lines.append(line.strip())

        threading.Thread(target=pump, daemon=True).start()
        return child

    def kill_group(self) -> None:
        """SIGKILL the whole group (its id is the child's PID) and reap the child."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait(30)


class DevCluster(DevServer):
    """The session's `orbitmq dev`, with a helper to create topics."""

    def new_topic(self, queues: int = 4, prefix: str = "t", name: str | None = None) -> str:
        """Create topic `name` (else a fresh one) with `queues` queues; routable at once, as the broker
        registers a topic with the NameServer before it answers the creation."""
        from orbitmq.admin.api import AdminClient
        from orbitmq.admin.models import TopicConfig
        from orbitmq.remoting.loop import run

        name = name or f"{prefix}_{uuid.uuid4().hex[:10]}"

        async def create() -> None:
            async with AdminClient([self.namesrv]) as admin:
                await admin.create_topic(self.broker, TopicConfig(name, read_queue_nums=queues,
                                                                  write_queue_nums=queues))

        run(create())
        return name


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    pytest.importorskip("orbitmq.dev", reason="the `orbitmq dev` command is not in this tree")
    with running_dev(tmp_path_factory.mktemp("orbitmq-dev")) as server:
        yield DevCluster(server.process, server.namesrv, server.broker, server.broker_name)


#: One message as the test producer stored it: (broker name, queue id, queue offset, body).
Sent = tuple[str, int, int, bytes]


@pytest.fixture
def produce(dev: DevCluster) -> Callable[..., list[Sent]]:
    """Send messages with the project's own producer (not the code under test), in batches per queue."""
    from orbitmq.client.producer import Producer
    from orbitmq.client.queue import MessageQueue
    from orbitmq.common.message import Message
    from orbitmq.remoting.loop import run
    from orbitmq.spark.cluster import Cluster
    from orbitmq.spark.options import ConnectionOptions

    def send(topic: str, bodies: list[bytes], *, tags: str | None = None, keys: str | None = None,
             batch: int = 64) -> list[Sent]:
        with Cluster(ConnectionOptions(dev.namesrv)) as c:
            queues = c.route(topic).write_queues

        async def go() -> list[Sent]:
            out: list[Sent] = []
            async with Producer("SPARK_TEST_PRODUCER", namesrv_addr=dev.namesrv) as producer:
                for n, first in enumerate(range(0, len(bodies), batch)):
                    q = queues[n % len(queues)]
                    msgs = []
                    for body in bodies[first:first + batch]:
                        msg = Message(topic, body)
                        if tags:
                            msg.tags = tags
                        if keys:
                            msg.keys = keys
                        msgs.append(msg)
                    mq = MessageQueue(topic, q.broker_name, q.queue_id)
                    r = await producer.send(msgs if len(msgs) > 1 else msgs[0], queue=mq)
                    out += [(q.broker_name, q.queue_id, r.queue_offset + i, m.body) for i, m in enumerate(msgs)]
            return out

        return run(go())

    return send
