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

from orbitmq.client import (
    ConsumeOrderlyResult,
    ConsumeResult,
    Message,
    MessageExt,
    Producer,
    PushConsumer,
    hash_selector,
)
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
        """Stop every process by PID; keep each one's output in `<root>/<host>.out` for a post-mortem."""
        for host, proc in reversed(list(self.procs.items())):
            proc.stop()
            (self.root / f"{host}.out").write_text("".join(proc.output))
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
                 prefix: str = "m", orderly: bool = False, **send_kwargs: Any) -> None:
        self.recorder = recorder
        self.producer = producer
        self.topic = topic
        self.prefix = prefix
        self.send_kwargs = send_kwargs
        #: Orderly: each stream goes to one queue (hash of its index), each send tried once.
        self.orderly = orderly
        self._stop = asyncio.Event()
        self._tasks = [asyncio.ensure_future(self._sender(i)) for i in range(in_flight)]
        self.outcomes: list[tuple[float, Outcome]] = []
        #: (started, ended, outcome) of every send.
        self.sends: list[tuple[float, float, Outcome]] = []

    async def _sender(self, index: int) -> None:
        stream = f"{self.prefix}{index}"
        for seq in itertools.count():
            if self._stop.is_set():
                return
            key = f"{stream}-{seq}"
            started = self.recorder.clock()
            kwargs = dict(self.send_kwargs)
            if self.orderly:
                kwargs.update(selector=hash_selector, arg=index)
            outcome = await self.recorder.send(self.producer, self.topic, key, stream=stream, seq=seq, **kwargs)
            self.outcomes.append((self.recorder.clock(), outcome))
            self.sends.append((started, self.recorder.clock(), outcome))
            # A steady load, not a flood (the machine is shared); after a failure a short pause, as
            # an application would make, so a sender does not spin while no master is known.
            await asyncio.sleep(0.005 if outcome is Outcome.ACKED else 0.1)

    def acked_since(self, moment: float) -> int:
        return sum(1 for at, outcome in self.outcomes if at >= moment and outcome is Outcome.ACKED)

    def first_ack_after(self, moment: float) -> float | None:
        """When the first send that started after `moment` was acknowledged (None: none yet)."""
        return min((end for start, end, outcome in self.sends if start >= moment and outcome is Outcome.ACKED),
                   default=None)

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)


# --- controller mode (docs/failover.md): etcd and replicas on their own hosts --------------------

ETCD_PORT = 2379
ETCD_PEER_PORT = 2380
HA_PORT = 10912
#: Short leases keep the tests quick (the default is 6 s).
LEASE_SECONDS = 3


def start_etcd(cluster: Cluster, host: str = "etcd", timeout: float = 30.0) -> ServerProcess:
    """One etcd member on `host` (Debian's etcd-server), healthy before this returns."""
    import shutil
    import subprocess
    import urllib.request

    binary = shutil.which("etcd")
    assert binary is not None, "etcd is not installed"
    net = cluster.net
    if host not in net.hosts:
        net.add_host(host)
    ip = net.addr(host)
    client_url, peer_url = f"http://{ip}:{ETCD_PORT}", f"http://{ip}:{ETCD_PEER_PORT}"
    data = cluster.root / host
    data.mkdir(parents=True, exist_ok=True)
    with open(data / "etcd.log", "ab") as log:
        popen = subprocess.Popen(net.command(host, [
            binary, "--name", "fo", "--data-dir", str(data / "data"),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"fo={peer_url}"]), stdout=log, stderr=subprocess.STDOUT)
    proc = ServerProcess(popen, [f"{ip}:{ETCD_PORT}"])
    cluster.procs[host] = proc
    deadline = time.monotonic() + timeout
    while True:
        if popen.poll() is not None:
            raise RuntimeError("etcd exited:\n" + (data / "etcd.log").read_text(errors="replace")[-3000:])
        try:
            with net.enter(host), urllib.request.urlopen(f"{client_url}/health", timeout=1) as reply:
                if b'"true"' in reply.read():
                    return proc
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("etcd not healthy in time")
        time.sleep(0.1)


def replica_conf(cluster: Cluster, host: str, broker_name: str, etcd: str = "etcd", **extra: str) -> dict[str, str]:
    """broker.conf keys of a controller-mode replica on `host` (docs/failover.md)."""
    values = {
        "brokerRole": "SYNC_MASTER",
        "haListenPort": str(HA_PORT),
        "fastChannelEnable": "false",
        "enableControllerMode": "true",
        "etcdEndpoints": f"{cluster.net.addr(etcd)}:{ETCD_PORT}",
        "controllerLeaseSeconds": str(LEASE_SECONDS),
        "controllerReportIntervalMs": "300",
        "haMaxTimeSlaveNotCatchup": "5000",
    }
    values.update(extra)
    return values


def start_replica(cluster: Cluster, host: str, broker_name: str = "broker-fo", **extra: str) -> ServerProcess:
    values = replica_conf(cluster, host, broker_name, **extra)
    role = values.pop("brokerRole")
    return cluster.start_broker(host, broker_name, role, 0, **values)


async def route_addrs(namesrv: str, topic: str, broker_name: str) -> dict[int, str]:
    """brokerId -> address of `broker_name` in `topic`'s route as the NameServer gives it now."""
    from orbitmq.common import jsonbody
    from orbitmq.remoting.codes import RequestCode
    from orbitmq.remoting.command import RemotingCommand
    from orbitmq.remoting.transport import RemotingClient

    client = RemotingClient()
    try:
        request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        response = await client.invoke(namesrv, request, 3.0)
    except (OrbitMQError, OSError, TimeoutError):
        return {}
    finally:
        await client.close()
    if response.code != 0:
        return {}
    for data in jsonbody.loads(response.body_bytes())["brokerDatas"]:
        if data["brokerName"] == broker_name:
            return {int(k): v for k, v in jsonbody.int_keys(data["brokerAddrs"]).items()}
    return {}


async def wait_master(cluster: Cluster, broker_name: str = "broker-fo", *, topic: str = "TBW102",
                      other_than: str | None = None, timeout: float = 60.0) -> str:
    """The host whose broker the NameServer names brokerId 0 of `broker_name` (not `other_than`)."""
    deadline = time.monotonic() + timeout
    by_addr = {cluster.addr(h): h for h in cluster.net.hosts}
    while True:
        master = (await route_addrs(cluster.namesrv, topic, broker_name)).get(0)
        host = by_addr.get(master or "")
        if host is not None and host != other_than:
            return host
        if time.monotonic() > deadline:
            raise AssertionError(f"no master of {broker_name} other than {other_than} within {timeout}s")
        await asyncio.sleep(0.1)


def group_state(cluster: Cluster, broker_name: str = "broker-fo", etcd: str = "etcd") -> dict[str, Any]:
    """The group's `state` key (docs/failover.md: masterId, masterEpoch, sss...) read through etcd's
    JSON gateway from the client host ({} when absent or unreachable). Blocking, and brief."""
    import base64
    import json
    import urllib.request

    key = f"/orbitmq/v1/{cluster.cluster_name}/{broker_name}/state"
    body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
    url = f"http://{cluster.net.addr(etcd)}:{ETCD_PORT}/v3/kv/range"
    try:
        with cluster.net.enter("client"), urllib.request.urlopen(url, body, timeout=2) as reply:
            kvs = json.loads(reply.read()).get("kvs", [])
    except OSError:
        return {}
    return json.loads(base64.b64decode(kvs[0]["value"])) if kvs else {}


async def topic_on_replicas(cluster: Cluster, hosts: list[str], topic: str) -> bool:
    """Whether every broker on `hosts` knows `topic` (slaves copy the master's topics every 10 s)."""
    from orbitmq.common import jsonbody
    from orbitmq.remoting.codes import RequestCode
    from orbitmq.remoting.command import RemotingCommand
    from orbitmq.remoting.transport import RemotingClient

    client = RemotingClient()
    try:
        for host in hosts:
            request = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG)
            try:
                response = await client.invoke(cluster.addr(host), request, 3.0)
            except (OrbitMQError, OSError, TimeoutError):
                return False
            if response.code != 0 or topic not in jsonbody.loads(response.body_bytes())["topicConfigTable"]:
                return False
        return True
    finally:
        await client.close()
