"""What a failover costs: a three-replica group (docs/failover.md), each replica on its own host.

    ./run bench failover [--role SYNC_MASTER] [--rounds 3] [--poll-ms 30000] [--seconds 10] [--in-flight 64]
                         [--load 4] [--consumer-dies]

Hosts are network namespaces on one bridge (tests/support/netns.py; needs root, iproute2 and
etcd), so killing a host's broker is what a crashed machine looks like to the others. For each
round, under a steady load of `--load` senders (4) and one push consumer:

* the master is SIGKILLed;
* "first ack": from the kill to the first acknowledged send that started after it (written on
  the new master); "consumers": from the kill to the first delivery of such a message;
* "duplicates": deliveries beyond the first during the round;
* "lost": acknowledged sends never delivered once the consumer has caught up (or, with
  `--role ASYNC_MASTER`, once deliveries have been quiet for the route poll plus 10 s). A
  SYNC_MASTER group must lose none (the run stops if it does); an ASYNC_MASTER loses the tail
  its slaves had not yet copied when the master died, and the figure is that tail;
* the old master is restarted and rejoins as a slave before the next round.

With `--consumer-dies` the consumer is stopped at the kill without committing its offsets (its
process died too) and a new one in the same group starts once the new master takes writes: it
resumes from the committed offsets the new master copied from the old one, so "duplicates" then
measures how far behind the slaves' copy of the consumer offsets was.

`--poll-ms` is the clients' NameServer poll (RocketMQ's default 30 s: a client learns of the new
master at its next poll); the README quotes both the default and `--poll-ms 1000`.

Then throughput: `--in-flight` sends in flight for `--seconds` against the group running as
SYNC_MASTER (acknowledged once the in-sync replicas hold it) and as ASYNC_MASTER.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from orbitmq.client import Message, Producer, PushConsumer
from orbitmq.client.results import SendStatus
from orbitmq.errors import OrbitMQError
from tests.support import netns
from tests.support.history import History, Outcome
from tests.support.nscluster import (
    Cluster,
    Load,
    Recorder,
    group_state,
    start_etcd,
    start_replica,
    topic_on_replicas,
    wait_master,
)

REPLICAS = ["r0", "r1", "r2"]
GROUP = "broker-fo"


async def _wait(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"bench failover: {what} not within {timeout}s")
        await asyncio.sleep(0.1)


async def _healthy(cluster: Cluster, topic: str) -> None:
    await _wait(lambda: topic_on_replicas(cluster, REPLICAS, topic), 60, f"topic {topic} on every replica")
    await _wait(lambda: len(group_state(cluster, GROUP).get("sss", [])) == len(REPLICAS), 60,
                "every replica in the in-sync set")


async def _caught_up(history: History, quiet: float | None) -> None:
    """Every acknowledged send delivered; or, when `quiet` is given, no delivery for that long."""
    deadline = time.monotonic() + 180
    seen, since = -1, time.monotonic()
    while not history.acked_keys() <= history.delivered_keys():
        now = time.monotonic()
        if len(history.receives) != seen:
            seen, since = len(history.receives), now
        elif quiet is not None and now - since >= quiet:
            return
        if now > deadline:
            raise SystemExit("bench failover: consumers caught up not within 180s")
        await asyncio.sleep(0.1)


async def _crash(consumer: PushConsumer) -> None:
    """Stop a consumer as if its process died: what it consumed since its last commit is not committed."""

    async def lost(*args: object, **kwargs: object) -> None:
        return None

    consumer._persist = lost  # type: ignore[method-assign]
    await consumer.shutdown()


async def _round(cluster: Cluster, producer: Producer, topic: str, group: str,
                 poll: dict[str, int], lossy: bool, senders: int,
                 consumer_dies: bool = False) -> tuple[str, float, float, int, int, int]:
    """One SIGKILL of the master under load: (old master, first ack s, consumers s, duplicates, acked, lost)."""
    recorder = Recorder()
    history = recorder.history
    options: dict[str, int] = dict(poll)
    if consumer_dies:  # commits every second; the first commit comes 10 s after the start
        options["persist_consumer_offset_interval_ms"] = 1000
    consumer = recorder.consumer(cluster.namesrv, group, topic, **options)
    await consumer.start()
    started = time.monotonic()
    load = Load(recorder, producer, topic, in_flight=senders)
    try:
        await _wait(lambda: load.acked_since(0) >= 100, 60, "load before the kill")
        if consumer_dies:  # past the consumer's first commits, so there are offsets to copy
            await _wait(lambda: time.monotonic() - started >= 15, 60, "15 s of consumption")
        old = await wait_master(cluster, GROUP, topic=topic)
        killed = time.monotonic()
        cluster.kill(old)
        if consumer_dies:  # it restarts from the offsets the new master holds
            await _crash(consumer)
        await _wait(lambda: load.first_ack_after(killed) is not None, 120, "a write on the new master")
        if consumer_dies:
            consumer = recorder.consumer(cluster.namesrv, group, topic, instance="c2", **options)
            await consumer.start()
        await _wait(lambda: load.acked_since(killed) >= 100, 60, "load after the failover")
        await load.stop()
        await _caught_up(history, poll["poll_name_server_interval_ms"] / 1000 + 10 if lossy else None)
    finally:
        await consumer.shutdown()
    # Raises on phantoms or failed sends delivered; and on any acknowledged loss unless `lossy`.
    report = history.check(max_lost=len(history.sends) if lossy else 0)
    first_ack = load.first_ack_after(killed)
    assert first_ack is not None
    after = {k for k, s in history.sends.items() if s.outcome is Outcome.ACKED and s.at >= killed}
    resumed = min(r.at for r in history.receives if r.key in after)
    return old, first_ack - killed, resumed - killed, report.duplicates, report.acked, len(report.lost)


async def _failovers(cluster: Cluster, rounds: int, poll_ms: int, lossy: bool, senders: int,
                     consumer_dies: bool = False) -> list[tuple[float, float, int, int, int]]:
    rows: list[tuple[float, float, int, int, int]] = []
    poll = {"poll_name_server_interval_ms": poll_ms}
    async with Producer("BenchFoPG", namesrv_addr=cluster.namesrv, send_msg_timeout_ms=3000, **poll) as producer:
        for index in range(rounds):
            topic = f"BenchFailover{index}"  # a topic per round: each round's consumer reads its own history
            await wait_master(cluster, GROUP)
            await producer.create_topic("TBW102", topic, 4)
            await _healthy(cluster, topic)
            old, first, resumed, duplicates, acked, lost = await _round(
                cluster, producer, topic, f"BenchFoCG{index}", poll, lossy, senders, consumer_dies)
            rows.append((first, resumed, duplicates, acked, lost))
            print(f"  round {index + 1}: master {old} killed; first ack {first:.2f} s, consumers {resumed:.2f} s, "
                  f"duplicates {duplicates}, acknowledged lost {lost} of {acked} acked", flush=True)
            cluster.start_broker(old)  # rejoins as a slave of the new epoch
    return rows


async def _throughput(cluster: Cluster, seconds: float, in_flight: int, topic: str) -> float:
    async with Producer("BenchTpPG", namesrv_addr=cluster.namesrv, poll_name_server_interval_ms=1000) as producer:
        await producer.create_topic("TBW102", topic, 8)
        await _healthy(cluster, topic)
        body = b"x" * 256
        acked = 0
        deadline = time.monotonic() + seconds

        async def lane() -> None:
            nonlocal acked
            while time.monotonic() < deadline:
                try:
                    result = await producer.send(Message(topic, body))
                except OrbitMQError:
                    continue
                if result.status is SendStatus.SEND_OK:
                    acked += 1

        started = time.monotonic()
        await asyncio.gather(*(lane() for _ in range(in_flight)))
        return acked / (time.monotonic() - started)


def _group(net: netns.Network, root: Path, role: str) -> Cluster:
    cluster = Cluster(net, root)
    cluster.start_namesrv()
    start_etcd(cluster)
    for host in REPLICAS:
        start_replica(cluster, host, GROUP, brokerRole=role)
    return cluster


async def _main(args: argparse.Namespace) -> None:
    reason = netns.skip_reason()
    if importlib.util.find_spec("orbitmq.failover") is None:
        reason = "controller mode (orbitmq.failover) is not in this build"
    if reason is not None or shutil.which("etcd") is None:
        raise SystemExit(f"bench failover: {reason or 'etcd is not installed'}")
    print(f"failover of a 3-replica {args.role} group, lease 3 s, client NameServer poll {args.poll_ms} ms, "
          f"{args.rounds} rounds, {args.load} sends in flight")
    with netns.Network() as net, tempfile.TemporaryDirectory() as tmp:
        net.add_host("client")
        cluster = _group(net, Path(tmp) / "fo", args.role)
        try:
            with net.enter("client"):
                rows = await _failovers(cluster, args.rounds, args.poll_ms, args.role == "ASYNC_MASTER", args.load,
                                        args.consumer_dies)
        finally:
            cluster.close()
    firsts, resumes, dups = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    print(f"first ack on the new master: median {statistics.median(firsts):.2f} s, max {max(firsts):.2f} s")
    print(f"consumers resuming:          median {statistics.median(resumes):.2f} s, max {max(resumes):.2f} s")
    print(f"duplicates per failover:     median {statistics.median(dups)}, max {max(dups)}")
    lost = [r[4] for r in rows]
    print(f"acknowledged lost per failover: {lost}, max {max(lost)} ({args.role}; of {sum(r[3] for r in rows)} acked)")
    print(f"throughput, {args.in_flight} sends in flight for {args.seconds} s, 256-byte bodies:")
    for role in ("SYNC_MASTER", "ASYNC_MASTER"):
        with netns.Network() as net, tempfile.TemporaryDirectory() as tmp:
            net.add_host("client")
            cluster = _group(net, Path(tmp) / role, role)
            try:
                with net.enter("client"):
                    await wait_master(cluster, GROUP)
                    rate = await _throughput(cluster, args.seconds, args.in_flight, f"BenchTp{role.split('_')[0]}")
            finally:
                cluster.close()
        print(f"  {role:<13} {rate:9.0f} acknowledged sends/s", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="bench.failover", description=__doc__.split("\n")[0])
    parser.add_argument("--role", choices=["SYNC_MASTER", "ASYNC_MASTER"], default="SYNC_MASTER",
                        help="replication of the group whose master is killed (throughput always runs both)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--poll-ms", type=int, default=30000)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--load", type=int, default=4, help="sends in flight during the failover rounds")
    parser.add_argument("--consumer-dies", action="store_true",
                        help="the consumer dies with the master (its last offsets uncommitted) and a new one "
                             "resumes from the offsets the new master holds: duplicates measure the offset sync")
    args = parser.parse_args(argv)
    asyncio.run(_main(args))


if __name__ == "__main__":
    sys.exit(main())
