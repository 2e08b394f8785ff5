"""gRPC front benchmark: RocketMQ 5 protocol beside the 4.x remoting path on the same broker.

    python -m bench.grpc [--quick] [--messages N] [--inflight 64] [--size 1024]
                         [--tls-mode disabled|permissive|enforcing] [--tls]

Starts `orbitmq dev` (its in-process gRPC front on a free port) in a child process, makes an
8-queue topic, and measures from this process:

* grpc send      SendMessage, one message per call (as the official clients send), N in flight
                 (and the `orbitmq dev` process's CPU per message meanwhile, from /proc)
* remoting send  orbitmq.client.Producer.send over SEND_MESSAGE_V2, the same number in flight
* grpc receive   ReceiveMessage (batches of 32, 4 receivers) + AckMessage of each batch, draining
                 N messages the group was waiting for (POP underneath)
* remoting pull  LitePullConsumer draining the same N messages with PULL_MESSAGE

`--tls-mode` starts `orbitmq dev` with that `tls.server.mode` (a throwaway test certificate; without
it, dev's own default: permissive on the gRPC port); `--tls` makes the gRPC calls over TLS.

Figures are messages per second of wall time (the broker, the proxy and this load generator
share the machine's cores).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

import grpc

from orbitmq.client import LitePullConsumer, Message, Producer
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.pb import service_pb2 as spb
from orbitmq.proxy.pb import service_pb2_grpc as sgrpc
from orbitmq.remoting.tls import TlsSettings

MD = [("x-mq-client-id", f"bench@{os.getpid()}@0@grpc"), ("x-mq-language", "PYTHON"), ("x-mq-namespace", "")]


#: The gRPC channel the load generator uses (TLS with --tls) and the remoting clients' TLS settings.
GRPC_CREDENTIALS: grpc.ChannelCredentials | None = None
REMOTING_TLS: TlsSettings | None = None


def channel(proxy: str) -> grpc.aio.Channel:
    if GRPC_CREDENTIALS is None:
        return grpc.aio.insecure_channel(proxy)
    return grpc.aio.secure_channel(proxy, GRPC_CREDENTIALS)


def start_dev(root: str, tls_mode: str | None) -> tuple[subprocess.Popen[str], str, str]:
    extra: list[str] = []
    if tls_mode:
        conf = os.path.join(root, "broker.conf")
        with open(conf, "w") as f:
            f.write(f"tls.server.mode={tls_mode}\ntls.test.mode.enable=true\n")
            if tls_mode == "enforcing":  # the broker registers with the NameServer over TLS
                f.write("tls.enable=true\n")
        extra = ["-c", conf]
    proc = subprocess.Popen(
        [sys.executable, "-m", "orbitmq", "dev", "--store", os.path.join(root, "store"), "--namesrv-port", "0",
         "--broker-port", "0", "--no-metrics", "--console", "off", "--grpc-port", "0", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=dict(os.environ, PYTHONUNBUFFERED="1"),
    )
    namesrv = proxy = ""
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while not (namesrv and proxy):
        line = proc.stdout.readline()
        if not line or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit("orbitmq dev did not start")
        if line.startswith("namesrv listening on "):
            namesrv = line.split()[-1]
        elif line.startswith("proxy listening on "):
            proxy = line.split()[-1]
    return proc, namesrv, proxy


def grpc_message(topic: str, body: bytes) -> pb.Message:
    m = pb.Message(body=body)
    m.topic.name = topic
    m.system_properties.message_id = uuid.uuid4().hex.upper()
    m.system_properties.message_type = pb.NORMAL
    m.system_properties.body_encoding = pb.IDENTITY
    m.system_properties.born_timestamp.GetCurrentTime()
    return m


async def grpc_send(proxy: str, topic: str, n: int, inflight: int, body: bytes) -> float:
    async with channel(proxy) as ch:
        stub = sgrpc.MessagingServiceStub(ch)
        left = n

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                resp = await stub.SendMessage(spb.SendMessageRequest(messages=[grpc_message(topic, body)]),
                                              metadata=MD, timeout=10)
                if resp.status.code != pb.OK:
                    raise SystemExit(f"gRPC send failed: {resp.status}")

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(inflight)))
        return n / (time.perf_counter() - started)


async def remoting_send(namesrv: str, topic: str, n: int, inflight: int, body: bytes) -> float:
    async with Producer(f"bench_pg_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv, tls=REMOTING_TLS) as producer:
        await producer.send(Message(topic, body))  # routes and connections first
        left = n

        async def worker() -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await producer.send(Message(topic, body))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(inflight)))
        return n / (time.perf_counter() - started)


def receive_request(topic: str, group: str) -> spb.ReceiveMessageRequest:
    req = spb.ReceiveMessageRequest(batch_size=32)
    req.group.name = group
    req.message_queue.topic.name = topic
    req.filter_expression.expression = "*"
    req.invisible_duration.FromSeconds(60)
    req.long_polling_timeout.FromSeconds(5)
    return req


async def grpc_join(proxy: str, topic: str, group: str) -> None:
    async with channel(proxy) as ch:
        stub = sgrpc.MessagingServiceStub(ch)
        async for _ in stub.ReceiveMessage(receive_request(topic, group), metadata=MD, timeout=30):
            pass


async def grpc_receive(proxy: str, topic: str, group: str, n: int) -> float:
    async with channel(proxy) as ch:
        stub = sgrpc.MessagingServiceStub(ch)
        got = 0

        async def receiver() -> None:
            nonlocal got
            while got < n:
                entries: list[spb.AckMessageEntry] = []
                async for item in stub.ReceiveMessage(receive_request(topic, group), metadata=MD, timeout=30):
                    if item.HasField("message"):
                        sp = item.message.system_properties
                        entries.append(spb.AckMessageEntry(message_id=sp.message_id, receipt_handle=sp.receipt_handle))
                if entries:
                    ack = spb.AckMessageRequest(entries=entries)
                    ack.group.name = group
                    ack.topic.name = topic
                    resp = await stub.AckMessage(ack, metadata=MD, timeout=10)
                    if resp.status.code not in (pb.OK, pb.MULTIPLE_RESULTS):
                        raise SystemExit(f"ack failed: {resp.status}")
                    got += len(entries)
                elif got < n:
                    continue

        started = time.perf_counter()
        await asyncio.gather(*(receiver() for _ in range(4)))
        return got / (time.perf_counter() - started)


async def remoting_pull(namesrv: str, topic: str, n: int) -> float:
    consumer = LitePullConsumer(f"bench_pull_{uuid.uuid4().hex[:6]}", namesrv_addr=namesrv,
                                consume_from_where="CONSUME_FROM_FIRST_OFFSET", tls=REMOTING_TLS)
    consumer.subscribe(topic, "*")
    await consumer.start()
    try:
        got = 0
        started = time.perf_counter()
        while got < n:
            got += len(await consumer.poll(timeout=5) or [])
        return got / (time.perf_counter() - started)
    finally:
        await consumer.shutdown()


def process_cpu(pid: int) -> float | None:
    """Seconds of CPU (user + system) process `pid` has used, or None without /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(args: Any) -> dict[str, float]:
    root = tempfile.mkdtemp(prefix="bench-grpc-")
    global GRPC_CREDENTIALS, REMOTING_TLS
    proc, namesrv, proxy = start_dev(root, args.tls_mode)
    if args.tls_mode == "enforcing":
        REMOTING_TLS = TlsSettings.client(test_mode=True)
    if args.tls:  # trust the certificate the port presents (a throwaway one)
        host, _, port = proxy.rpartition(":")
        cert = ssl.get_server_certificate((host, int(port)))
        GRPC_CREDENTIALS = grpc.ssl_channel_credentials(root_certificates=cert.encode())
    try:
        body = os.urandom(args.size)
        topic = "BenchGrpc"
        async with Producer("bench_admin", namesrv_addr=namesrv, tls=REMOTING_TLS) as admin:
            await admin.create_topic("TBW102", topic, 8)
        group = "bench_grpc_receivers"
        await grpc_join(proxy, topic, group)  # a new POP group starts at the end of each queue
        cpu = process_cpu(proc.pid)
        out = {"grpc send": await grpc_send(proxy, topic, args.messages, args.inflight, body)}
        if cpu is not None:  # the server's CPU per gRPC send (the broker, the front, the proxy)
            out["grpc send server CPU µs/msg"] = (process_cpu(proc.pid) or 0.0) - cpu
            out["grpc send server CPU µs/msg"] *= 1e6 / args.messages
        out |= {
            "remoting send": await remoting_send(namesrv, topic, args.messages, args.inflight, body),
        }
        # The group waits for 2N + 1 messages (both sends); drain N through gRPC, N by pull elsewhere.
        out["grpc receive"] = await grpc_receive(proxy, topic, group, args.messages)
        out["remoting pull"] = await remoting_pull(namesrv, topic, args.messages)
        return out
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="2,000 messages")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--inflight", type=int, default=64)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--tls-mode", choices=("disabled", "permissive", "enforcing"),
                        help="tls.server.mode of orbitmq dev (default: dev's own)")
    parser.add_argument("--tls", action="store_true", help="gRPC calls over TLS")
    args = parser.parse_args()
    if args.quick:
        args.messages = 2_000
    figures = asyncio.run(run(args))
    print(f"{args.messages} messages of {args.size} B, {args.inflight} sends in flight, "
          f"tls.server.mode {args.tls_mode or 'dev default'}, gRPC over {'TLS' if args.tls else 'plain text'}")
    for name, rate in figures.items():
        if "µs" in name:
            print(f"  {name:<14} {rate:>10,.0f}")
        else:
            print(f"  {name:<14} {rate:>10,.0f} msg/s")


if __name__ == "__main__":
    main()
