"""Fixtures for the Spark connector: one local[2] SparkSession and one `orbitmq dev` per test session.

Spark start-up costs seconds, so both are session-scoped; each test uses its
own topics. The Spark JVM and the dev server are child processes stopped by
PID at the end.
"""

from __future__ import annotations

import os
import re
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

from tests.support.procs import ServerProcess, eventually, orbitmq_command, start_server


def _spark_available() -> str | None:
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark/pyarrow are not installed (the 'spark' extra)"
    if shutil.which("java") is None:
        return "java is not installed"
    return None


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


@dataclass
class DevCluster:
    """A running `orbitmq dev` (NameServer and broker in one process)."""

    process: ServerProcess
    namesrv: str
    broker: str

    def new_topic(self, queues: int = 4, prefix: str = "t") -> str:
        """Create a fresh topic with `queues` queues and wait until the NameServer routes it."""
        from orbitmq.admin.api import AdminClient
        from orbitmq.admin.models import TopicConfig
        from orbitmq.errors import OrbitMQError
        from orbitmq.remoting.loop import run
        from orbitmq.spark.cluster import Cluster
        from orbitmq.spark.options import ConnectionOptions

        name = f"{prefix}_{uuid.uuid4().hex[:10]}"

        async def create() -> None:
            async with AdminClient([self.namesrv]) as admin:
                await admin.create_topic(self.broker, TopicConfig(name, read_queue_nums=queues,
                                                                  write_queue_nums=queues))

        run(create())
        with Cluster(ConnectionOptions(self.namesrv)) as c:
            def routed() -> bool:
                try:
                    return len(c.route(name, refresh=True).read_queues) == queues
                except OrbitMQError:
                    return False

            eventually(routed, timeout=40, interval=0.2, message=f"topic {name} never got a route")
        return name


def _announced(server: ServerProcess) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in list(server.output):
        m = re.match(r"(namesrv|broker \S+) listening on (\S+)$", line.strip())
        if m:
            found[m.group(1).split()[0]] = m.group(2)
    return found


def start_dev(store: Path) -> tuple[ServerProcess, str, str]:
    """Start `orbitmq dev`; returns (process, NameServer address, broker address) once both listen.

    The log on stderr also says "listening on", so the stdout readiness lines
    are picked out by their exact form rather than counted.
    """
    server = start_server(
        orbitmq_command("dev", "--store", str(store), "--namesrv-port", "0", "--broker-port", "0",
                        "--host", "127.0.0.1"),
        listeners=1,
        timeout=60,
    )
    try:
        eventually(lambda: len(_announced(server)) == 2 or server.popen.poll() is not None, timeout=60)
        found = _announced(server)
        if len(found) != 2:
            raise RuntimeError("orbitmq dev did not announce both listeners:\n" + "".join(server.output))
    except BaseException:
        server.stop()
        raise
    return server, found["namesrv"], found["broker"]


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevCluster]:
    pytest.importorskip("orbitmq.dev", reason="the broker's `orbitmq dev` command is not in this tree")
    server, namesrv, broker = start_dev(tmp_path_factory.mktemp("orbitmq-dev"))
    try:
        yield DevCluster(server, namesrv, broker)
    finally:
        server.stop()


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
