"""`orbitmq dev` as a test fixture: a NameServer and a broker in one child process.

Shared by the admin and interop tests. The process listens on ephemeral
loopback ports, keeps its store under a temp folder and is stopped by PID.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests.support.procs import ServerProcess, eventually, orbitmq_command, start_server


@dataclass
class DevCluster:
    process: ServerProcess
    namesrv: str
    broker_addr: str
    broker_name: str

    def stop(self) -> None:
        self.process.stop()


def start_dev(root: Path) -> DevCluster:
    """Start `orbitmq dev` under `root` and wait for both readiness lines."""
    store = root / "store"
    process = start_server(
        orbitmq_command("dev", "--host", "127.0.0.1", "--namesrv-port", "0", "--broker-port", "0",
                        "--store", str(store)),
        listeners=2,
        cwd=str(root),
    )
    # Log lines on stderr ("remoting server listening on ...") also count as readiness
    # for start_server, so wait here for the two lines `orbitmq dev` prints on stdout.
    found: dict[str, tuple[str, str]] = {}

    def both_announced() -> bool:
        for line in list(process.output):
            words = line.split()
            if line.startswith("namesrv listening on "):
                found["namesrv"] = ("", words[-1])
            elif line.startswith("broker ") and len(words) == 5 and words[2:4] == ["listening", "on"]:
                found["broker"] = (words[1], words[-1])
        return len(found) == 2

    try:
        eventually(both_announced, timeout=30, message="orbitmq dev did not announce both listeners")
    except AssertionError:
        process.stop()
        raise RuntimeError("orbitmq dev printed no namesrv/broker readiness lines:\n" + "".join(process.output))
    broker_name, broker_addr = found["broker"]
    return DevCluster(process, found["namesrv"][1], broker_addr, broker_name)
