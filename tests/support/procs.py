"""Start OrbitMQ servers as real child processes and stop them by PID.

Every server command prints one readiness line per listener on stdout,
`... listening on HOST:PORT`, after its socket is bound (port 0 resolved).
Tests wait for those lines, never for a fixed time.
"""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# Only the servers' own announcement lines count; log lines (stderr is merged in)
# may also say "listening on" and must not be taken for readiness.
READY = re.compile(r"^(?:namesrv|broker \S+) listening on (\S+):(\d+)\s*$")


@dataclass
class ServerProcess:
    popen: subprocess.Popen[bytes]
    addresses: list[str] = field(default_factory=list)
    output: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def addr(self) -> str:
        return self.addresses[0]

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        """Signal the process by PID and wait; SIGKILL if it does not exit."""
        if self.popen.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.popen.wait(timeout)
        return self.popen.returncode

    def kill(self) -> None:
        """SIGKILL, as a crash."""
        self.stop(signal.SIGKILL)


def orbitmq_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "orbitmq", *args]


def start_lone_broker(root: Path, conf: str) -> ServerProcess:
    """A broker without a NameServer on an ephemeral loopback port; `conf` is its broker.conf text,
    written under `root` with its store."""
    conf_path = root / "broker.conf"
    conf_path.write_text(conf)
    return start_server(
        orbitmq_command("broker", "-c", str(conf_path), "--listen", "127.0.0.1:0", "--store", str(root / "store"))
    )


def start_server(
    args: list[str],
    *,
    listeners: int = 1,
    timeout: float = 30.0,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> ServerProcess:
    """Start `args` and wait until it printed `listeners` readiness lines."""
    full_env = dict(os.environ)
    full_env["PYTHONUNBUFFERED"] = "1"
    if env:
        full_env.update(env)
    popen = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=full_env, cwd=cwd
    )
    server = ServerProcess(popen)
    assert popen.stdout is not None
    os.set_blocking(popen.stdout.fileno(), False)
    sel = selectors.DefaultSelector()
    sel.register(popen.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    pending = b""
    try:
        while len(server.addresses) < listeners:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{args!r} not ready after {timeout}s:\n" + "".join(server.output))
            if not sel.select(min(remaining, 0.5)):
                if popen.poll() is not None:
                    break
                continue
            chunk = popen.stdout.read()
            if not chunk:
                if popen.poll() is not None:
                    break
                continue
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                line = raw.decode(errors="replace") + "\n"
                server.output.append(line)
                m = READY.search(line)
                if m:
                    server.addresses.append(f"{m.group(1)}:{m.group(2)}")
        if len(server.addresses) < listeners:
            server.stop(signal.SIGKILL)
            raise RuntimeError(f"{args!r} exited before ready:\n" + "".join(server.output))
    finally:
        sel.close()
    # Keep draining output in the background so a chatty server never blocks on a full pipe.
    _drain_in_background(server)
    return server


def _drain_in_background(server: ServerProcess) -> None:
    import threading

    stream = server.popen.stdout
    assert stream is not None
    os.set_blocking(stream.fileno(), True)

    def pump() -> None:
        for raw in iter(stream.readline, b""):
            server.output.append(raw.decode(errors="replace"))
            if len(server.output) > 5000:
                del server.output[:1000]

    threading.Thread(target=pump, daemon=True).start()


def eventually(predicate, timeout: float = 10.0, interval: float = 0.05, message: str = "") -> None:  # type: ignore[no-untyped-def]
    """Wait until `predicate()` is truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return
        if time.monotonic() > deadline:
            raise AssertionError(message or f"condition not met within {timeout}s")
        time.sleep(interval)


def iter_lines(server: ServerProcess) -> Iterator[str]:
    yield from list(server.output)
