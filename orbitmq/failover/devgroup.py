"""`orbitmq dev --replicas N`: etcd, a NameServer and a broker group of N replicas on this machine.

The supervisor (this process) runs the NameServer, starts Debian's `etcd` with its data in
`<store>/etcd` on free loopback ports, and starts each replica as its own `orbitmq broker`
process with controller mode on: replica i listens on `broker_port + 10 i` (HA port + 1)
with its store in `<store>/replica<i>`. Replica 0 starts first and so becomes the first
master, on the usual port. A replica that exits (SIGKILL it to watch the group heal) is
started again after RESTART_DELAY_S and rejoins as a slave of the new epoch. SIGINT or
SIGTERM stops the replicas, etcd and the NameServer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import socket
import sys
import urllib.request
from dataclasses import dataclass

import click

from orbitmq.broker.cli import announce, stop_signals
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.namesrv.server import NameServer

log = logging.getLogger("orbitmq.dev")

#: Pause before a replica that exited is started again.
RESTART_DELAY_S = 3.0
#: Port distance between replicas (listen, HA = listen + 1, VIP = listen - 2).
PORT_STEP = 10


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _health(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as reply:
            return b'"true"' in reply.read()
    except OSError:
        return False


async def start_etcd(binary: str, data_dir: str, host: str) -> tuple[asyncio.subprocess.Process, str]:
    """etcd on free ports of `host` with its data in `data_dir`; waits until healthy."""
    os.makedirs(data_dir, exist_ok=True)
    client_port, peer_port = _free_port(host), _free_port(host)
    client_url, peer_url = f"http://{host}:{client_port}", f"http://{host}:{peer_port}"
    log_file = await asyncio.to_thread(open, os.path.join(data_dir, "etcd.log"), "ab")
    with log_file:
        process = await asyncio.create_subprocess_exec(
            binary, "--name", "orbitmq-dev", "--data-dir", os.path.join(data_dir, "data"),
            "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
            "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
            "--initial-cluster", f"orbitmq-dev={peer_url}", "--initial-cluster-state", "new",
            stdout=log_file, stderr=log_file,
        )
    for _ in range(300):
        if process.returncode is not None:
            raise click.ClickException(f"etcd exited with {process.returncode}; see {data_dir}/etcd.log")
        if await asyncio.to_thread(_health, f"{client_url}/health"):
            return process, f"{host}:{client_port}"
        await asyncio.sleep(0.1)
    process.kill()
    raise click.ClickException(f"etcd did not become healthy; see {data_dir}/etcd.log")


@dataclass
class ReplicaPlan:
    index: int
    port: int
    conf: str
    process: asyncio.subprocess.Process | None = None


def replica_conf(path: str, index: int, host: str, port: int, store_dir: str, namesrv: str, etcd: str,
                 extra: dict[str, str]) -> None:
    values = {
        "brokerRole": "SYNC_MASTER", **extra,
        "listenHost": host, "listenPort": str(port), "haListenPort": str(port + 1),
        "storePathRootDir": os.path.join(store_dir, f"replica{index}"), "namesrvAddr": namesrv,
        "enableControllerMode": "true", "etcdEndpoints": etcd,
    }
    if host not in ("0.0.0.0", "::"):
        values["brokerIP1"] = host
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(f"{k}={v}\n" for k, v in values.items()))


async def _relay(replica: ReplicaPlan, ready: asyncio.Event) -> None:
    """Copy a replica's output to ours (its readiness line to stdout, the rest to stderr)."""
    process = replica.process
    assert process is not None and process.stdout is not None
    async for raw in process.stdout:
        line = raw.decode(errors="replace").rstrip("\n")
        if line.startswith("broker ") and " listening on " in line:
            announce(line)
            ready.set()
        else:
            click.echo(f"[replica{replica.index}] {line}", err=True)


async def _run_replica(replica: ReplicaPlan, stopping: asyncio.Event, first_ready: asyncio.Event) -> None:
    while not stopping.is_set():
        replica.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "orbitmq", "broker", "-c", replica.conf,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        relay = asyncio.ensure_future(_relay(replica, first_ready))
        code = await replica.process.wait()
        await asyncio.gather(relay, return_exceptions=True)
        if stopping.is_set():
            return
        click.echo(f"replica{replica.index} exited ({code}); starting it again in {RESTART_DELAY_S:.0f}s", err=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stopping.wait(), RESTART_DELAY_S)


async def serve_replicas(host: str, namesrv_port: int, broker_port: int, store_dir: str, replicas: int,
                         extra: dict[str, str]) -> None:
    binary = shutil.which("etcd")
    if binary is None:
        raise click.ClickException("--replicas needs etcd (Debian's etcd-server; `./run dev --replicas 3` installs it)")
    store_dir = os.path.abspath(store_dir)
    os.makedirs(store_dir, exist_ok=True)
    async with stop_signals() as stop:
        ns = NameServer(NamesrvConfig(listen_host=host, listen_port=namesrv_port,
                                      kv_config_path=os.path.join(store_dir, "namesrv", "kvConfig.json")))
        try:
            ns_host, ns_port = await ns.start()
        except OSError as exc:
            raise click.ClickException(f"cannot start namesrv on {host}:{namesrv_port}: {exc.strerror or exc}") from None
        etcd_process = None
        stopping = asyncio.Event()
        plans: list[ReplicaPlan] = []
        tasks: list[asyncio.Task[None]] = []
        try:
            announce(f"namesrv listening on {ns_host}:{ns_port}")
            announce(f"store {store_dir}")
            etcd_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
            etcd_process, endpoint = await start_etcd(binary, os.path.join(store_dir, "etcd"), etcd_host)
            announce(f"etcd serving on {endpoint}")
            for index in range(replicas):
                port = broker_port + PORT_STEP * index if broker_port else 0
                conf = os.path.join(store_dir, f"replica{index}.conf")
                replica_conf(conf, index, host, port, store_dir, f"{ns_host}:{ns_port}", endpoint, extra)
                plans.append(ReplicaPlan(index, port, conf))
            for plan in plans:  # one after the other: the first one ready is the first master
                ready = asyncio.Event()
                tasks.append(asyncio.ensure_future(_run_replica(plan, stopping, ready)))
                waiters = [asyncio.ensure_future(ready.wait()), asyncio.ensure_future(stop.wait())]
                await asyncio.wait(waiters, timeout=60, return_when=asyncio.FIRST_COMPLETED)
                for waiter in waiters:
                    waiter.cancel()
                if stop.is_set():
                    break
            await stop.wait()
        finally:
            stopping.set()
            for plan in plans:
                if plan.process is not None and plan.process.returncode is None:
                    with contextlib.suppress(ProcessLookupError):
                        plan.process.send_signal(signal.SIGTERM)
            for plan in plans:
                if plan.process is not None:
                    try:
                        await asyncio.wait_for(plan.process.wait(), 15)
                    except TimeoutError:
                        plan.process.kill()
            await asyncio.gather(*tasks, return_exceptions=True)
            if etcd_process is not None and etcd_process.returncode is None:
                etcd_process.terminate()
                await etcd_process.wait()
            await ns.close()
