"""OrbitMQ servers on namespaced hosts (tests/support/netns.py), and client load that records a
history (tests/support/history.py).

Every host has its own address, so servers use RocketMQ's usual ports (9876, 10911) and tests
never race for ports. The test's clients run on a host named "client": wrap the client part of a
test in `net.enter("client")`.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orbitmq.client import ConsumeOrderlyResult, ConsumeResult, Message, MessageExt, Producer, PushConsumer
from orbitmq.client.results import SendStatus
from orbitmq.errors import MessageValidationError, OrbitMQError
from tests.support.history import History, Outcome
from tests.support.netns import Network
from tests.support.procs import ServerProcess, orbitmq_command, start_server

NAMESRV_PORT = 9876
BROKER_PORT = 10911
#: Small CommitLog files keep the stores small.
FILE_SIZE = 1024 * 1024


@dataclass
class Cluster:
    """A NameServer host and broker hosts on `net`, their processes stopped by PID at `close()`."""

    net: Network
    root: Path
    cluster_name: str = "FoCluster"
    procs: dict[str, ServerProcess] = field(default_factory=dict)
    confs: dict[str, Path] = field(default_factory=dict)

    @property
    def namesrv(self) -> str:
        return f"{self.net.addr('ns')}:{NAMESRV_PORT}"

    def addr(self, host: str) -> str:
        return f"{self.net.addr(host)}:{BROKER_PORT}"

    def start_namesrv(self) -> ServerProcess:
        if "ns" not in self.net.hosts:
            self.net.add_host("ns")
        args = orbitmq_command(
            "namesrv", "--listen", f"{self.net.addr('ns')}:{NAMESRV_PORT}",
            "--kv-config-path", str(self.root / "ns-kv.json"),
        )
        self.procs["ns"] = start_server(self.net.command("ns", args))
        return self.procs["ns"]

    def broker_conf(self, host: str, broker_name: str, role: str, broker_id: int = 0, **extra: str) -> Path:
        values = {
            "brokerClusterName": self.cluster_name,
            "brokerName": broker_name,
            "brokerId": str(broker_id),
            "brokerRole": role,
            "listenHost": self.net.addr(host),
            "brokerIP1": self.net.addr(host),
            "listenPort": str(BROKER_PORT),
            "namesrvAddr": self.namesrv,
            "storePathRootDir": str(self.root / host),
            "mappedFileSizeCommitLog": str(FILE_SIZE),
            "autoCreateTopicEnable": "true",
            "slaveReadEnable": "true",
            "haSendHeartbeatInterval": "1000",
        }
        values.update(extra)
        path = self.root / f"{host}.conf"
        path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
        self.confs[host] = path
        return path

    def start_broker(self, host: str, broker_name: str | None = None, role: str = "ASYNC_MASTER",
                     broker_id: int = 0, **extra: str) -> ServerProcess:
        """Start (or restart, with its earlier config when no name is given) the broker on `host`."""
        if host not in self.net.hosts:
            self.net.add_host(host)
        if broker_name is not None:
            self.broker_conf(host, broker_name, role, broker_id, **extra)
        args = orbitmq_command("broker", "-c", str(self.confs[host]))
        self.procs[host] = start_server(self.net.command(host, args))
        return self.procs[host]

    def kill(self, host: str) -> None:
        self.procs[host].kill()

    def close(self) -> None:
        for proc in reversed(list(self.procs.values())):
            proc.stop()
        self.procs.clear()


def _key_of(msg: MessageExt) -> str:
    return msg.body.decode(errors="replace")


class Recorder:
    """Clients' side of a history: sends by a producer, deliveries to push consumers."""

    def __init__(self, history: History | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.history = history or History()
        self.clock = clock
        self._ids = itertools.count()

    def next_key(self, prefix: str) -> str:
        return f"{prefix}-{next(self._ids)}"

    async def send(self, producer: Producer, topic: str, key: str, *, stream: str | None = None,
                   seq: int | None = None, **kwargs: Any) -> Outcome:
        """Send `key` as body and message key; record how it ended."""
        try:
            result = await producer.send(Message(topic, key.encode(), keys=[key]), **kwargs)
        except MessageValidationError:
            self.history.send(key, Outcome.FAILED, stream=stream, seq=seq, at=self.clock())
            return Outcome.FAILED
        except (TimeoutError, OrbitMQError, OSError):
            self.history.send(key, Outcome.UNKNOWN, stream=stream, seq=seq, at=self.clock())
            return Outcome.UNKNOWN
        mq = result.message_queue
        queue = f"{mq.broker_name}:{mq.queue_id}" if mq is not None else None
        # FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE: stored on the master, not confirmed by replicas.
        outcome = Outcome.ACKED if result.status is SendStatus.SEND_OK else Outcome.UNKNOWN
        self.history.send(key, outcome, queue=queue, stream=stream, seq=seq, at=self.clock(),
                          broker=mq.broker_name if mq is not None else None)
        return outcome

    def consumer(self, namesrv: str, group: str, topic: str, *, orderly: bool = False,
                 instance: str = "c1", **options: Any) -> PushConsumer:
        """A push consumer that records every delivery (concurrently or orderly)."""
        consumer = PushConsumer(group, namesrv_addr=namesrv, instance_name=instance,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET", **options)
        consumer.subscribe(topic, "*")

        def record(msgs: list[MessageExt], context: Any) -> None:
            mq = context.message_queue
            for m in msgs:
                self.history.receive(_key_of(m), queue=f"{mq.broker_name}:{mq.queue_id}", consumer=instance,
                                     at=self.clock())

        if orderly:
            def orderly_listener(msgs: list[MessageExt], context: Any) -> ConsumeOrderlyResult:
                record(msgs, context)
                return ConsumeOrderlyResult.SUCCESS

            consumer.register_orderly_listener(orderly_listener)
        else:
            def listener(msgs: list[MessageExt], context: Any) -> ConsumeResult:
                record(msgs, context)
                return ConsumeResult.CONSUME_SUCCESS

            consumer.register_listener(listener)
        return consumer


class Load:
    """`in_flight` concurrent senders sending until `stop()`; each sender is one ordered stream."""

    def __init__(self, recorder: Recorder, producer: Producer, topic: str, *, in_flight: int = 4,
                 prefix: str = "m", **send_kwargs: Any) -> None:
        self.recorder = recorder
        self.producer = producer
        self.topic = topic
        self.prefix = prefix
        self.send_kwargs = send_kwargs
        self._stop = asyncio.Event()
        self._tasks = [asyncio.ensure_future(self._sender(i)) for i in range(in_flight)]
        self.outcomes: list[tuple[float, Outcome]] = []

    async def _sender(self, index: int) -> None:
        stream = f"{self.prefix}{index}"
        for seq in itertools.count():
            if self._stop.is_set():
                return
            key = f"{stream}-{seq}"
            outcome = await self.recorder.send(self.producer, self.topic, key, stream=stream, seq=seq,
                                               **self.send_kwargs)
            self.outcomes.append((self.recorder.clock(), outcome))
            await asyncio.sleep(0.005)  # a steady load, not a flood: the machine is shared

    def acked_since(self, moment: float) -> int:
        return sum(1 for at, outcome in self.outcomes if at >= moment and outcome is Outcome.ACKED)

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)
