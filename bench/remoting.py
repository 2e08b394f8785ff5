"""Round trips per second of the remoting layer over loopback.

    python -m bench.remoting [--seconds 2] [--window 64] [--repeat 1] [--profile]

The server runs in a child process (`--serve`), the client here. For each
event loop (asyncio, uvloop) it measures a no-op request answered by a
RemotingServer (an `async def` handler and a plain, inline one), one at a
time and with `--window` requests in flight, plus a
bare asyncio echo of a frame-sized message as the yardstick of what the loop
and the socket cost without any codec. Besides round trips per second it
prints the CPU time each process spent per round trip, which stays
meaningful when other work shares the machine. `--profile` runs the uvloop server
and the pipelined uvloop client under cProfile and prints their top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, cast

from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.loop import loop_factory, run, uvloop_available
from orbitmq.remoting.transport import Peer, RemotingClient, RemotingServer

NOOP = 9999  # answered by an `async def` handler (a task per request)
NOOP_INLINE = 9998  # answered by a plain function handler (inline, no task)
ECHO_SIZE = 120  # about the size of a small request frame


# --- server side (child process) -------------------------------------------------------


async def _noop(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    return request.response()


def _noop_inline(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    return request.response()


class _Echo(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not an asyncio.Transport

    def data_received(self, data: bytes) -> None:
        self.transport.write(data)


async def _serve() -> None:
    server = RemotingServer("127.0.0.1", 0)
    server.register(NOOP, _noop)
    server.register(NOOP_INLINE, _noop_inline)
    host, port = await server.start()
    echo = await asyncio.get_running_loop().create_server(_Echo, "127.0.0.1", 0)
    echo_port = echo.sockets[0].getsockname()[1]
    print(f"remoting listening on {host}:{port}", flush=True)
    print(f"echo listening on 127.0.0.1:{echo_port}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes stdin
    echo.close()
    await server.close()


# --- client side ---------------------------------------------------------------------------


async def _remoting(addr: str, seconds: float, window: int, code: int) -> int:
    """Round trips completed in `seconds` with `window` requests kept in flight."""
    async with RemotingClient() as client:
        await client.invoke(addr, RemotingCommand.request(code))  # connect before timing
        deadline = time.perf_counter() + seconds

        async def one_lane() -> int:
            n = 0
            while time.perf_counter() < deadline:
                await client.invoke(addr, RemotingCommand.request(code), timeout=10.0)
                n += 1
            return n

        return sum(await asyncio.gather(*(one_lane() for _ in range(window))))


async def _echo(port: int, seconds: float) -> int:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    payload = b"x" * ECHO_SIZE
    deadline = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < deadline:
        writer.write(payload)
        await reader.readexactly(ECHO_SIZE)
        n += 1
    writer.close()
    return n


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` (Linux /proc; 0.0 where unavailable)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


@dataclass
class Row:
    loop: str
    workload: str
    rate: float
    client_us: float  # client process CPU per round trip
    server_us: float  # server process CPU per round trip


def _best(
    repeat: int, loop: str, workload: str, make: Callable[[], Coroutine[Any, Any, int]], use_uvloop: bool, pid: int
) -> Row:
    """The fastest of `repeat` runs: on a shared machine, slow runs measure the neighbours."""
    runs = (_measure(loop, workload, make(), use_uvloop, pid) for _ in range(repeat))
    return max(runs, key=lambda row: row.rate)


def _measure(loop: str, workload: str, coro: Coroutine[Any, Any, int], use_uvloop: bool, server_pid: int) -> Row:
    server_cpu = _cpu_seconds(server_pid)
    client_cpu = time.process_time()
    started = time.perf_counter()
    count = run(coro, use_uvloop=use_uvloop)
    elapsed = time.perf_counter() - started
    client_cpu = time.process_time() - client_cpu
    server_cpu = _cpu_seconds(server_pid) - server_cpu
    return Row(loop, workload, count / elapsed, client_cpu / count * 1e6, server_cpu / count * 1e6)


def _start_server(use_uvloop: bool, profile: bool) -> tuple[subprocess.Popen[str], str, int]:
    args = [sys.executable, "-m", "bench.remoting", "--serve"] + ([] if use_uvloop else ["--no-uvloop"])
    args += ["--profile"] if profile else []
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    remoting = proc.stdout.readline().split()[-1]
    echo_port = int(proc.stdout.readline().split(":")[-1])
    return proc, remoting, echo_port


def _stop_server(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each measurement")
    parser.add_argument("--window", type=int, default=64, help="requests in flight when pipelined")
    parser.add_argument("--repeat", type=int, default=1, help="runs per measurement; the fastest is shown")
    parser.add_argument("--profile", action="store_true", help="profile the pipelined uvloop client")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-uvloop", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.serve:
        if opts.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            run(_serve(), use_uvloop=not opts.no_uvloop)
            profiler.disable()
            print("--- server profile ---", file=sys.stderr)
            pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(18)
        else:
            run(_serve(), use_uvloop=not opts.no_uvloop)
        return

    loops = [False, True] if uvloop_available() else [False]
    rows: list[Row] = []
    for use_uvloop in loops:
        name = "uvloop" if use_uvloop else "asyncio"
        proc, addr, echo_port = _start_server(use_uvloop, opts.profile and use_uvloop)
        try:
            echo = functools.partial(_echo, echo_port, opts.seconds)
            rows.append(_best(opts.repeat, name, "bare echo, 1 in flight", echo, use_uvloop, proc.pid))
            for code, kind in ((NOOP, "async"), (NOOP_INLINE, "inline")):
                for window in (1, opts.window):
                    work = functools.partial(_remoting, addr, opts.seconds, window, code)
                    workload = f"no-op {kind} handler, {window} in flight"
                    rows.append(_best(opts.repeat, name, workload, work, use_uvloop, proc.pid))
            if opts.profile and use_uvloop:
                profiler = cProfile.Profile()
                with asyncio.Runner(loop_factory=loop_factory(True)) as runner:
                    profiler.enable()
                    runner.run(_remoting(addr, opts.seconds, opts.window, NOOP))
                    profiler.disable()
                pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
        finally:
            _stop_server(proc)

    print(f"\n{'loop':<8} {'workload':<34} {'round trips/s':>14} {'client CPU/rt':>14} {'server CPU/rt':>14}")
    for r in rows:
        print(f"{r.loop:<8} {r.workload:<34} {r.rate:>14,.0f} {r.client_us:>12.1f}µs {r.server_us:>12.1f}µs")


if __name__ == "__main__":
    main()
