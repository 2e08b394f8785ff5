"""Hosts on one machine: one Linux network namespace per host, joined by a bridge.

A `Network` creates a hub namespace holding a bridge and, per host, a namespace whose `eth0`
is one end of a veth pair whose other end sits on that bridge. Every address is in
198.18.0.0/24 (RFC 2544's benchmarking range) and lives only inside these namespaces: none of
them has a default route and nothing is attached to the machine's own namespace, so test traffic
cannot reach a real network.

Faults:
- `isolate(host)` takes the host's link down at the bridge (it can reach no one, no one reaches it);
  `heal(host)` brings it back.
- `cut(a, b)` drops traffic between two hosts only (a blackhole route for the other's address in
  each), `mend(a, b)` removes it.
- `flap(host, ...)` toggles a host's link in a background thread.

Processes run inside a host with `ip netns exec` (which execs the command, so the PID is the
command's own and tests stop it by PID). The test's own sockets join a host with `enter(host)`:
the calling thread switches to that namespace (setns) for the block.

Every namespace name starts with `omqt<pid>-`; namespaces left by a crashed earlier run (whose PID
is gone) are removed, with the processes still in them, before a new network is built.

Needs root and iproute2; `skip_reason()` says why not when they are missing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Self

PREFIX = "omqt"
SUBNET = "198.18.0"
CLONE_NEWNET = 0x40000000
_NAME = re.compile(rf"^{PREFIX}(\d+)-")


def skip_reason() -> str | None:
    """Why network-namespace tests cannot run here, or None when they can."""
    if os.name != "posix" or not os.path.exists("/proc/self/ns/net"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs the suite as root)"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    probe = f"{PREFIX}{os.getpid()}-probe"
    done = subprocess.run(["ip", "netns", "add", probe], check=False, capture_output=True, text=True)
    if done.returncode != 0:
        return f"cannot create a network namespace: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=False, capture_output=True)
    return None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], check=False, capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def _namespaces() -> list[str]:
    out = _ip("netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _delete_namespace(name: str) -> None:
    """Kill what still runs in `name` (by PID), then delete it."""
    for _ in range(3):
        pids = [int(p) for p in _ip("netns", "pids", name, check=False).stdout.split() if p.isdigit()]
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    _ip("netns", "del", name, check=False)


def clean_stale() -> list[str]:
    """Remove namespaces of earlier runs whose process is gone; returns their names."""
    removed = []
    for name in _namespaces():
        m = _NAME.match(name)
        if m and not _alive(int(m.group(1))) and int(m.group(1)) != os.getpid():
            _delete_namespace(name)
            removed.append(name)
    return removed


_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@dataclass
class Host:
    name: str
    ns: str
    addr: str
    port: str  # the veth end on the bridge, in the hub namespace


@dataclass
class Network:
    """Hosts in their own namespaces on one bridge; `close()` removes everything."""

    token: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}-{int(time.monotonic() * 1000) % 100000}")
    hosts: dict[str, Host] = field(default_factory=dict)
    _flappers: list[tuple[threading.Event, threading.Thread]] = field(default_factory=list)
    _cuts: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        clean_stale()
        self.hub = f"{self.token}-hub"
        _ip("netns", "add", self.hub)
        try:
            _ip("-n", self.hub, "link", "set", "lo", "up")
            _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.hub, "link", "set", "br0", "up")
        except Exception:
            self.close()
            raise

    def add_host(self, name: str) -> Host:
        """A new host `name` with the next address of the subnet."""
        if name in self.hosts:
            raise ValueError(f"host {name} exists")
        index = len(self.hosts) + 1
        if index > 250:
            raise ValueError("at most 250 hosts")
        ns = f"{self.token}-{name}"
        host = Host(name, ns, f"{SUBNET}.{index}", f"h{index}")
        self.hosts[name] = host
        _ip("netns", "add", ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", self.hub, "link", "add", host.port, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("-n", self.hub, "link", "set", host.port, "master", "br0")
        _ip("-n", self.hub, "link", "set", host.port, "up")
        _ip("-n", ns, "addr", "add", f"{host.addr}/24", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        return host

    def command(self, host: str, args: list[str]) -> list[str]:
        """`args` run inside `host`'s namespace."""
        return ["ip", "netns", "exec", self.hosts[host].ns, *args]

    def addr(self, host: str) -> str:
        return self.hosts[host].addr

    # -- faults ------------------------------------------------------------------------------

    def isolate(self, host: str) -> None:
        _ip("-n", self.hub, "link", "set", self.hosts[host].port, "down")

    def heal(self, host: str) -> None:
        _ip("-n", self.hub, "link", "set", self.hosts[host].port, "up")

    def cut(self, a: str, b: str) -> None:
        """Drop all traffic between hosts a and b (both directions); others still reach both."""
        for src, dst in ((a, b), (b, a)):
            _ip("-n", self.hosts[src].ns, "route", "replace", "blackhole", f"{self.hosts[dst].addr}/32")
            self._cuts.add((src, dst))

    def mend(self, a: str, b: str) -> None:
        for src, dst in ((a, b), (b, a)):
            _ip("-n", self.hosts[src].ns, "route", "del", "blackhole", f"{self.hosts[dst].addr}/32", check=False)
            self._cuts.discard((src, dst))

    def cut_off(self, host: str, *others: str) -> None:
        """Cut `host` from each of `others` (all other hosts when none are named)."""
        for other in others or [h for h in self.hosts if h != host]:
            self.cut(host, other)

    def flap(self, host: str, down: float, up: float) -> None:
        """Toggle `host`'s link (down for `down` s, up for `up` s) until `stop_flapping()` or `close()`."""
        stop = threading.Event()

        def run() -> None:
            while not stop.is_set():
                self.isolate(host)
                if stop.wait(down):
                    break
                self.heal(host)
                stop.wait(up)
            self.heal(host)

        thread = threading.Thread(target=run, name=f"flap-{host}", daemon=True)
        thread.start()
        self._flappers.append((stop, thread))

    def stop_flapping(self) -> None:
        for stop, thread in self._flappers:
            stop.set()
        for stop, thread in self._flappers:
            thread.join(10)
        self._flappers.clear()

    def reachable(self, src: str, dst: str, port: int, timeout: float = 0.5) -> bool:
        """Whether a TCP connection from `src` to `dst:port` gets through (connected or refused)."""
        import socket

        with self.enter(src):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect((self.hosts[dst].addr, port))
            return True
        except ConnectionRefusedError:
            return True
        except OSError:
            return False
        finally:
            sock.close()

    # -- the test's own sockets --------------------------------------------------------------

    @contextmanager
    def enter(self, host: str) -> Iterator[None]:
        """Run the block with the calling thread in `host`'s namespace (sockets made here stay there)."""
        own = os.open(f"/proc/{os.getpid()}/task/{threading.get_native_id()}/ns/net", os.O_RDONLY)
        try:
            target = os.open(f"/var/run/netns/{self.hosts[host].ns}", os.O_RDONLY)
            try:
                _setns(target)
            finally:
                os.close(target)
            try:
                yield
            finally:
                _setns(own)
        finally:
            os.close(own)

    # -- teardown ----------------------------------------------------------------------------

    def close(self) -> None:
        """Stop flapping, kill what still runs in the hosts, delete every namespace of this network."""
        self.stop_flapping()
        for host in list(self.hosts.values()):
            _delete_namespace(host.ns)
        self.hosts.clear()
        _delete_namespace(self.hub)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
