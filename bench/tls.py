"""What TLS costs a remoting connection: requests per second, plain against TLS, over loopback.

    python -m bench.tls [--seconds 2] [--window 64] [--body 4096] [--no-uvloop]

One process, one RemotingServer per mode (disabled, enforcing, permissive)
with an echo handler, one client connection per run keeping `--window`
requests of `--body` bytes in flight. The certificates are made on the spot
(needs the `cryptography` package). Each row also gives the CPU time of the
process per request, which stays meaningful on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import tempfile
import time
from pathlib import Path

from orbitmq.remoting.certs import issue, make_ca
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.loop import run
from orbitmq.remoting.tls import TlsSettings
from orbitmq.remoting.transport import Peer, RemotingClient, RemotingServer

ECHO = 9001


async def _echo(request: RemotingCommand, peer: Peer) -> RemotingCommand:
    return request.response(body=request.body_bytes())


async def _rate(addr: str, context: ssl.SSLContext | None, seconds: float, window: int, body: bytes) -> int:
    async with RemotingClient(ssl_context=context) as client:
        await client.invoke(addr, RemotingCommand.request(ECHO))  # connect (and handshake) before timing
        deadline = time.perf_counter() + seconds

        async def lane() -> int:
            n = 0
            while time.perf_counter() < deadline:
                await client.invoke(addr, RemotingCommand.request(ECHO, body=body), timeout=10.0)
                n += 1
            return n

        return sum(await asyncio.gather(*(lane() for _ in range(window))))


async def _main(folder: Path, seconds: float, window: int, size: int) -> None:
    ca = make_ca()
    pair = issue(ca, "bench")
    (folder / "ca.pem").write_bytes(ca.cert_pem)
    (folder / "server.pem").write_bytes(pair.cert_pem)
    (folder / "server.key").write_bytes(pair.key_pem)
    server_keys = {"tls.server.certPath": str(folder / "server.pem"), "tls.server.keyPath": str(folder / "server.key")}
    client = TlsSettings.client(trust_cert_path=str(folder / "ca.pem")).client_context()
    body = b"x" * size
    print(f"{'server mode':<12} {'client':<7} {'req/s':>9} {'MB/s each way':>14} {'CPU us/req':>11}")
    for mode, contexts in (("disabled", [None]), ("enforcing", [client]), ("permissive", [None, client])):
        settings = TlsSettings.from_properties({"tls.server.mode": mode, **server_keys})
        server = RemotingServer("127.0.0.1", 0, tls=settings.server_tls())
        server.register(ECHO, _echo)
        host, port = await server.start()
        try:
            for context in contexts:
                cpu, started = time.process_time(), time.perf_counter()
                count = await _rate(f"{host}:{port}", context, seconds, window, body)
                elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
                print(f"{mode:<12} {'TLS' if context else 'plain':<7} {count / elapsed:>9.0f} "
                      f"{count * size / elapsed / 1e6:>14.1f} {cpu / count * 1e6:>11.1f}")
        finally:
            await server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--body", type=int, default=4096, help="request and response body bytes")
    parser.add_argument("--no-uvloop", action="store_true")
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="orbitmq-bench-tls-") as folder:
        run(_main(Path(folder), opts.seconds, opts.window, opts.body), use_uvloop=not opts.no_uvloop)


if __name__ == "__main__":
    main()
