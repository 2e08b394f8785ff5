"""A failover group for tests: etcd, a NameServer and N broker replicas as real processes.

    etcd = start_etcd(tmp_path / "etcd")                   # Debian's etcd-server, loopback ports
    namesrv = start_namesrv(tmp_path)                      # tests/ha/cluster.py
    group = FailoverGroup(tmp_path, etcd.endpoint, namesrv.addr, replicas=3)
    group.start_all()                                      # replica 0 first: it becomes the first master
    master = group.wait_master()                           # the Replica holding the master role
    master.kill()                                          # SIGKILL
    new = group.wait_master(other_than=master)
    ...
    group.stop_all(); etcd.stop()

Every replica has its own store folder, fixed loopback ports (listen and HA, picked free
below the ephemeral range so a restart finds them again) and the broker.conf keys of
docs/failover.md. `group_state(...)` reads the group's keys from etcd (model values).
`skip_without_etcd()` skips a test on a machine without etcd or aetcd.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from orbitmq.failover.etcd import EtcdClient, GroupKeys, GroupSnapshot
from tests.support.dev import steady_port
from tests.support.procs import ServerProcess, orbitmq_command, start_server

CLUSTER = "FoCluster"
BROKER_NAME = "broker-fo"
#: Short leases keep tests quick; the default is 6 s.
TEST_LEASE_SECONDS = 4


def etcd_binary() -> str | None:
    return shutil.which("etcd")


def skip_without_etcd() -> None:
    if etcd_binary() is None:
        pytest.skip("etcd is not installed (Debian's etcd-server; ./run installs it)")
    try:
        import aetcd  # noqa: F401
    except ImportError:
        pytest.skip("aetcd is not installed (pip install 'orbitmq[failover]')")


@dataclass
class Etcd:
    popen: subprocess.Popen[bytes]
    endpoint: str
    data_dir: Path

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.popen.poll() is None:
            os.kill(self.popen.pid, sig)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.popen.pid, signal.SIGKILL)
                self.popen.wait(10)


def start_etcd(data_dir: Path, *, timeout: float = 30.0) -> Etcd:
    """One etcd member on loopback ports, its data in `data_dir`; waits until /health answers."""
    binary = etcd_binary()
    assert binary is not None
    data_dir.mkdir(parents=True, exist_ok=True)
    client_port, peer_port = steady_port(), steady_port()
    while peer_port == client_port:
        peer_port = steady_port()
    client_url, peer_url = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    log = open(data_dir / "etcd.log", "ab")  # noqa: SIM115 - the child keeps it
    popen = subprocess.Popen(
        [binary, "--name", "orbitmq-test", "--data-dir", str(data_dir / "data"),
         "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
         "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
         "--initial-cluster", f"orbitmq-test={peer_url}"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    log.close()
    etcd = Etcd(popen, f"127.0.0.1:{client_port}", data_dir)
    deadline = time.monotonic() + timeout
    while True:
        if popen.poll() is not None:
            raise RuntimeError("etcd exited:\n" + (data_dir / "etcd.log").read_text(errors="replace")[-3000:])
        try:
            with urllib.request.urlopen(f"{client_url}/health", timeout=1) as reply:
                if b'"true"' in reply.read():
                    return etcd
        except OSError:
            pass
        if time.monotonic() > deadline:
            etcd.stop(signal.SIGKILL)
            raise TimeoutError("etcd not healthy in time")
        time.sleep(0.1)


def group_state(endpoint: str, cluster: str = CLUSTER, broker_name: str = BROKER_NAME,
                root: str = "/orbitmq/v1") -> GroupSnapshot:
    """The group's keys in etcd now."""

    async def read() -> GroupSnapshot:
        client = EtcdClient([endpoint])
        try:
            return await GroupKeys(client, root, cluster, broker_name).snapshot()
        finally:
            await client.close()

    return asyncio.run(read())


@dataclass
class Replica:
    name: str
    conf: Path
    store: Path
    port: int
    ha_port: int
    process: ServerProcess | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def ha_addr(self) -> str:
        return f"127.0.0.1:{self.ha_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.popen.poll() is None

    def start(self, timeout: float = 60.0) -> None:
        self.process = start_server(orbitmq_command("broker", "-c", str(self.conf)), timeout=timeout)

    def kill(self) -> None:
        if self.process is not None:
            self.process.kill()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    @property
    def output(self) -> str:
        return "".join(self.process.output) if self.process is not None else ""


@dataclass
class FailoverGroup:
    root: Path
    etcd_endpoint: str
    namesrv: str
    replicas_count: int = 3
    cluster: str = CLUSTER
    broker_name: str = BROKER_NAME
    lease_seconds: int = TEST_LEASE_SECONDS
    #: More broker.conf keys for every replica (brokerRole=ASYNC_MASTER, say).
    extra: dict[str, str] = field(default_factory=dict)
    replicas: list[Replica] = field(default_factory=list)

    def __post_init__(self) -> None:
        for index in range(self.replicas_count):
            name = f"replica{index}"
            port, ha_port = steady_port(), steady_port()
            store = self.root / name
            values = {
                "brokerClusterName": self.cluster, "brokerName": self.broker_name, "brokerRole": "SYNC_MASTER",
                "listenHost": "127.0.0.1", "brokerIP1": "127.0.0.1", "listenPort": str(port),
                "haListenPort": str(ha_port), "fastChannelEnable": "false", "namesrvAddr": self.namesrv,
                "storePathRootDir": str(store), "mappedFileSizeCommitLog": str(1 << 20),
                "haSendHeartbeatInterval": "1000", "enableControllerMode": "true",
                "etcdEndpoints": self.etcd_endpoint, "controllerLeaseSeconds": str(self.lease_seconds),
                "controllerReportIntervalMs": "300", "haMaxTimeSlaveNotCatchup": "5000",
            }
            values.update(self.extra)
            conf = self.root / f"{name}.conf"
            self.root.mkdir(parents=True, exist_ok=True)
            conf.write_text("".join(f"{k}={v}\n" for k, v in values.items()))
            self.replicas.append(Replica(name, conf, store, port, ha_port))

    def start_all(self) -> None:
        for replica in self.replicas:
            replica.start()

    def stop_all(self) -> None:
        for replica in self.replicas:
            replica.stop()

    def state(self) -> GroupSnapshot:
        return group_state(self.etcd_endpoint, self.cluster, self.broker_name)

    def by_addr(self, addr: str) -> Replica | None:
        return next((r for r in self.replicas if r.addr == addr), None)

    def wait_master(self, other_than: Replica | None = None, timeout: float = 60.0) -> Replica:
        """The replica that holds the master key (and is not `other_than`) and serves as master
        (its live report names the master's epoch), once there is one."""
        deadline = time.monotonic() + timeout
        while True:
            snap = self.state()
            if snap.master is not None:
                replica = self.by_addr(snap.master.addr)
                report = snap.lives.get(snap.master.broker_id)
                if (replica is not None and replica is not other_than and replica.running and report is not None
                        and report.following == snap.master.master_epoch):
                    return replica
            if time.monotonic() > deadline:
                raise AssertionError(f"no master within {timeout}s; state {snap.state} master {snap.master}")
            time.sleep(0.1)
