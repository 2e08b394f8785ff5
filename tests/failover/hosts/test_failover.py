"""Automatic failover (docs/failover.md) of a three-replica group, each replica on its own host,
etcd and the NameServer on others: the master is killed, cut off or flapped under load, a new
master takes writes, and the history holds every acknowledged message.

Clients poll the NameServer every second here (RocketMQ's default is 30 s; bench/failover.py
measures both) and consumers' long polls time out after 4 s (30 s by default), so the scenarios
stay short."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest

from orbitmq.client import Producer
from tests.client.helpers import create_topic, wait_until
from tests.failover.hosts.conftest import GROUP, REPLICAS
from tests.support.history import History, Outcome, Report
from tests.support.netns import Network
from tests.support.nscluster import (
    Cluster,
    Load,
    Recorder,
    group_state,
    route_addrs,
    topic_on_replicas,
    wait_master,
)
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(150)

#: Duplicates a failover may cause: redeliveries from the last committed consumer offset.
MAX_DUPLICATES = 200
POLL = {"poll_name_server_interval_ms": 1000}
#: A pull held by a master that was cut off ends after this (RocketMQ's default: 15 s held, 30 s timeout).
SHORT_PULLS = {"broker_suspend_max_time_ms": 2000, "consumer_timeout_when_suspend_ms": 4000}


@dataclass
class Outcomes:
    report: Report
    history: History
    load: Load
    fault_at: float
    old_master: str
    new_master: str


def acked_since(history: History, moment: float) -> int:
    return sum(1 for s in list(history.sends.values()) if s.outcome is Outcome.ACKED and s.at >= moment)


async def scenario(group: Cluster, topic: str, fault: Callable[[str, History], Awaitable[None]], *,
                   orderly: bool = False, after_fault: int = 40, new_master: bool = True) -> Outcomes:
    """Load (and consume) `topic`, apply `fault` to the master's host, wait for a new master and
    `after_fault` acknowledgements after the fault, stop, wait until consumers caught up, check.
    With `new_master=False` the fault may or may not cost the master its role."""
    recorder = Recorder()
    history = recorder.history
    with group.net.enter("client"):
        old = await wait_master(group, GROUP)
        async with Producer(f"{topic}PG", namesrv_addr=group.namesrv, send_msg_timeout_ms=5000, **POLL) as producer:
            await create_topic(producer, topic, queues=4)
            # A failover keeps what the replicas hold: the topic (copied to slaves every 10 s) and
            # every replica in the in-sync set, before the fault.
            await until(lambda: topic_on_replicas(group, list(REPLICAS), topic), timeout=30)
            await wait_until(lambda: len(group_state(group, GROUP).get("sss", [])) == len(REPLICAS), timeout=30)
            consumer = recorder.consumer(group.namesrv, f"{topic}CG", topic, orderly=orderly, **POLL, **SHORT_PULLS)
            await consumer.start()
            try:
                load = Load(recorder, producer, topic, orderly=orderly)
                await wait_until(lambda: acked_since(history, 0) >= 40, timeout=30)
                fault_at = time.monotonic()
                await fault(old, history)
                new = await wait_master(group, GROUP, topic=topic, other_than=old if new_master else None, timeout=40)
                await wait_until(lambda: acked_since(history, fault_at) >= after_fault, timeout=40,
                                 message=f"no writes acknowledged after the fault (new master {new})")
                await load.stop()
                await wait_until(lambda: history.acked_keys() <= history.delivered_keys(), timeout=45,
                                 message="acknowledged messages not consumed after the failover")
            finally:
                await consumer.shutdown()
    report = history.check(max_duplicates=MAX_DUPLICATES, orderly=orderly)
    return Outcomes(report, history, load, fault_at, old, new)


async def test_sigkill_of_the_master_under_load_keeps_order_and_the_old_master_rejoins(group: Cluster) -> None:
    """SIGKILL under load with orderly producers and consumers; the old master, restarted, follows
    the new one (the NameServer lists it under a non-zero id)."""

    async def kill(master: str, history: History) -> None:
        group.kill(master)

    out = await scenario(group, "FoKill", kill, orderly=True)
    assert out.report.acked >= 80 and out.report.order_violations == []
    group.start_broker(out.old_master)
    await rejoined_as_slave(group, "FoKill", out.old_master, out.new_master)


async def rejoined_as_slave(group: Cluster, topic: str, old: str, new: str) -> None:
    with group.net.enter("client"):
        deadline = time.monotonic() + 30
        while True:
            addrs = await route_addrs(group.namesrv, topic, GROUP)
            if addrs.get(0) == group.addr(new) and group.addr(old) in addrs.values():
                return
            assert time.monotonic() < deadline, f"the old master did not rejoin as a slave: {addrs}"
            await asyncio.sleep(0.2)


async def test_a_master_cut_off_from_everyone_stops_taking_writes(net: Network, group: Cluster) -> None:
    """The old master keeps one client (a host cut off with it): its sends must be refused once
    its lease can no longer be renewed, and whatever it acknowledged before must survive."""
    from tests.support.javawire import STORED_UNCONFIRMED

    net.add_host("stray")
    stray = History()
    refused = asyncio.Event()
    codes: list[tuple[float, int]] = []

    def stray_client(master: str) -> None:
        from tests.conformance.wire import Conn, encode_properties

        deadline = time.monotonic() + 40
        after_refusal = 10  # sends made after the first refusal: none may be acknowledged
        with net.enter("stray"), Conn(group.addr(master), timeout=10.0) as conn:
            for i in range(100000):
                if time.monotonic() > deadline or after_refusal == 0:
                    return
                if refused.is_set():
                    after_refusal -= 1
                key = f"stray-{i}"
                header = {"a": "StrayPG", "b": "FoCut", "c": "TBW102", "d": "4", "e": str(i % 4), "f": "0",
                          "g": str(int(time.time() * 1000)), "h": "0",
                          "i": encode_properties({"UNIQ_KEY": key, "WAIT": "true"}), "j": "0", "k": "false",
                          "m": "false"}
                try:
                    reply = conn.java(310, header, key.encode())
                except OSError:
                    stray.send(key, Outcome.UNKNOWN, at=time.monotonic())
                    return
                codes.append((round(time.monotonic(), 1), reply.code))
                if reply.code == 0:
                    stray.send(key, Outcome.ACKED, queue=f"{GROUP}:{reply.ext['queueId']}", at=time.monotonic())
                elif reply.code in STORED_UNCONFIRMED:
                    stray.send(key, Outcome.UNKNOWN, at=time.monotonic())
                else:
                    stray.send(key, Outcome.FAILED, at=time.monotonic())
                    if reply.code == 14:
                        refused.set()
                time.sleep(0.05)

    stray_thread: asyncio.Future[None] | None = None

    async def cut_off(master: str, history: History) -> None:
        nonlocal stray_thread
        net.cut_off(master, *[h for h in net.hosts if h not in (master, "stray")])
        stray_thread = asyncio.get_running_loop().run_in_executor(None, stray_client, master)

    out = await scenario(group, "FoCut", cut_off)
    assert stray_thread is not None
    await asyncio.wait_for(stray_thread, 60)
    assert refused.is_set(), f"the cut-off master never refused a send: {codes}"
    # Once it refused, it acknowledged nothing more; the stray sends it did acknowledge must survive:
    # heal, let it rejoin as a slave, and read them from the group's new master.
    first_refusal = min(s.at for s in stray.sends.values() if s.outcome is Outcome.FAILED)
    assert not [s for s in stray.sends.values() if s.outcome is Outcome.ACKED and s.at > first_refusal]
    for other in list(net.hosts):
        if other != out.old_master:
            net.mend(out.old_master, other)
    acked = {k for k, s in stray.sends.items() if s.outcome is Outcome.ACKED}
    if acked:
        from tests.support.javawire import JavaPuller

        def drain() -> set[str]:
            seen = History()
            with net.enter("client"):
                puller = JavaPuller(group.namesrv, seen, group="StrayCG")
                try:
                    puller.drain("FoCut", acked, 30.0)
                finally:
                    puller.close()
            return seen.delivered_keys()

        delivered = await asyncio.get_running_loop().run_in_executor(None, drain)
        assert acked <= delivered, "a send the old master acknowledged was lost"


async def test_a_master_cut_off_from_etcd_only_fences_itself_and_steps_down(net: Network, group: Cluster) -> None:
    async def cut(master: str, history: History) -> None:
        net.cut(master, "etcd")

    out = await scenario(group, "FoEtcd", cut)
    net.mend(out.old_master, "etcd")
    await rejoined_as_slave(group, "FoEtcd", out.old_master, out.new_master)


async def test_a_slave_killed_then_the_master_the_last_replica_takes_over(group: Cluster) -> None:
    async def kill_slave_then_master(master: str, history: History) -> None:
        slave = next(h for h in REPLICAS if h != master)
        group.kill(slave)
        killed = time.monotonic()
        # The group keeps taking writes with one replica fewer; then its master dies too.
        await wait_until(lambda: acked_since(history, killed) >= 20, timeout=30)
        group.kill(master)

    out = await scenario(group, "FoTwoKills", kill_slave_then_master)
    survivors = [h for h in REPLICAS if group.procs[h].popen.poll() is None]
    assert out.new_master in survivors and len(survivors) == 1


async def test_flapping_links_of_the_master_lose_nothing_acknowledged(net: Network, group: Cluster) -> None:
    async def flap(master: str, history: History) -> None:
        net.flap(master, down=1.5, up=1.0)
        await asyncio.sleep(8)  # a while of flapping under load
        net.stop_flapping()

    # Whether the master keeps its lease through the flaps depends on when renewals fall.
    out = await scenario(group, "FoFlap", flap, new_master=False)
    assert out.report.lost == []
