"""Controller mode operations: the admin listing, a planned switchover that loses nothing, the
old master returning as a slave of the new epoch, and a master cut off from etcd fencing itself."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys

import pytest

from orbitmq.common import jsonbody
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import create_topic, pull, records, send_v1
from tests.support.failover import Etcd, FailoverGroup, Replica
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(120)

TOPIC = "FailoverOpsTopic"


def admin(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "orbitmq", "admin", *args], check=False, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONUNBUFFERED": "1"})


async def _state(group: FailoverGroup):  # type: ignore[no-untyped-def]
    return await asyncio.to_thread(group.state)


async def _in_sync(group: FailoverGroup, size: int) -> None:
    """Wait until the in-sync set has `size` members (a SYNC_MASTER then has a slave to wait for)."""

    async def enough() -> bool:
        state = (await _state(group)).state
        return state is not None and len(state.sss) >= size

    await until(enough, timeout=30)


async def _ready(group: FailoverGroup, client: RemotingClient) -> Replica:
    master = await asyncio.to_thread(group.wait_master)
    for replica in group.replicas:
        await create_topic(client, replica.addr, TOPIC, queues=1)
    await _in_sync(group, len(group.replicas))
    return master


async def _send_acked(client: RemotingClient, addr: str, body: bytes) -> None:
    """Send until acknowledged: a loaded machine may miss a renewal (the master fences for a
    moment) or see a slave reconnecting; a retry may store a copy twice, never lose one."""

    async def acked() -> bool:
        return (await send_v1(client, addr, TOPIC, body)).code == ResponseCode.SUCCESS

    await until(acked, timeout=15)


async def _bodies(client: RemotingClient, addr: str) -> list[bytes]:
    response = await pull(client, addr, TOPIC, "FailoverOpsCheck", 0, max_nums=1000)
    return [m.body for m in records(response)] if response.code == ResponseCode.SUCCESS else []


async def _route_master(client: RemotingClient, namesrv: str, broker_name: str) -> str:
    request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC})
    response = await client.invoke(namesrv, request, 10.0)
    if response.code != ResponseCode.SUCCESS:
        return ""
    for data in jsonbody.loads(response.body_bytes())["brokerDatas"]:
        if data["brokerName"] == broker_name:
            return str(jsonbody.int_keys(data["brokerAddrs"]).get(0, ""))
    return ""


async def test_admin_lists_the_group_and_a_planned_switchover_loses_nothing(
    group: FailoverGroup, etcd: Etcd, client: RemotingClient
) -> None:
    old = await _ready(group, client)
    sent = [b"planned %d" % i for i in range(20)]
    for body in sent:
        await _send_acked(client, old.addr, body)

    listing = await asyncio.to_thread(admin, "getSyncStateSet", "-a", etcd.endpoint)
    assert listing.returncode == 0, listing.stderr
    lines = [line.split() for line in listing.stdout.splitlines() if group.broker_name in line]
    assert len(lines) == 3 and sum("master" in line for line in lines) == 1
    assert all("alive" in line and "yes" in line for line in lines)
    epochs = await asyncio.to_thread(admin, "getBrokerEpoch", "-a", etcd.endpoint, "-b", group.broker_name)
    assert epochs.returncode == 0 and old.addr in epochs.stdout

    snap = await _state(group)
    assert snap.state is not None and snap.master is not None
    target = next(i for i, r in snap.lives.items() if r.addr != old.addr)
    switched = await asyncio.to_thread(
        admin, "electMaster", "-a", etcd.endpoint, "-c", group.cluster, "-bn", group.broker_name, "-b", str(target))
    assert switched.returncode == 0, switched.stdout + switched.stderr
    after = await _state(group)
    assert after.master is not None and after.master.broker_id == target
    assert after.state is not None and after.state.master_epoch == snap.state.master_epoch + 1
    new_addr = after.master.addr
    held = await _bodies(client, new_addr)
    assert set(held) == set(sent)  # every acknowledged message, nothing never sent
    # The old master follows the new one and refuses sends; the new one takes them and the route names it.
    refused = await send_v1(client, old.addr, TOPIC, b"to the old master")
    assert refused.code == ResponseCode.SERVICE_NOT_AVAILABLE
    await _in_sync(group, 2)

    async def taken() -> bool:  # SLAVE_NOT_AVAILABLE until a slave has reconnected to the new master
        return (await send_v1(client, new_addr, TOPIC, b"after")).code == ResponseCode.SUCCESS

    await until(taken, timeout=15)

    async def route_moved() -> bool:
        return await _route_master(client, group.namesrv, group.broker_name) == new_addr

    await until(route_moved, timeout=30)
    wrong = await asyncio.to_thread(
        admin, "electMaster", "-a", etcd.endpoint, "-c", group.cluster, "-bn", group.broker_name, "-b", "99")
    assert wrong.returncode == 1 and "not alive" in wrong.stderr


def _metrics(replica: Replica) -> str:
    import urllib.request

    line = next(x for x in replica.output.splitlines() if x.startswith("metrics listening on "))
    with urllib.request.urlopen(f"http://{line.split()[-1]}/metrics", timeout=10) as reply:
        return str(reply.read().decode())


def _gauge(text: str, name: str) -> float:
    return next(float(x.rsplit(" ", 1)[1]) for x in text.splitlines() if x.startswith(name + "{"))


@pytest.mark.parametrize("group", [{"metricsExporterType": "PROM", "metricsPromExporterPort": "0"}], indirect=True)
async def test_the_old_master_returns_as_a_slave_of_the_new_epoch(
    group: FailoverGroup, client: RemotingClient
) -> None:
    old = await _ready(group, client)
    for i in range(10):
        await _send_acked(client, old.addr, b"before %d" % i)
    old.kill()
    new = await asyncio.to_thread(group.wait_master, old)
    await _in_sync(group, 2)
    for i in range(10):
        async def taken(body: bytes = b"after %d" % i) -> bool:  # SLAVE_NOT_AVAILABLE until a slave reconnects
            return (await send_v1(client, new.addr, TOPIC, body)).code == ResponseCode.SUCCESS

        await until(taken, timeout=15)
    old.start()

    async def follows() -> bool:
        snap = await _state(group)
        mine = next((r for r in snap.lives.values() if r.addr == old.addr), None)
        return (mine is not None and snap.state is not None and mine.following == snap.state.master_epoch
                and snap.master is not None and snap.master.addr == new.addr)

    await until(follows, timeout=30)
    assert (await send_v1(client, old.addr, TOPIC, b"x")).code == ResponseCode.SERVICE_NOT_AVAILABLE

    async def caught_up() -> bool:
        snap = await _state(group)
        return _offset(snap, old.addr) == _offset(snap, new.addr) > 0

    await until(caught_up, timeout=30)
    # Counted: the new master was elected, the returned one follows.
    new_metrics, old_metrics = _metrics(new), _metrics(old)
    assert 'orbitmq_failover_events_total{' in new_metrics and 'event="elected"' in new_metrics
    assert _gauge(new_metrics, "orbitmq_failover_is_master") == 1
    assert _gauge(old_metrics, "orbitmq_failover_is_master") == 0
    assert 'event="followed"' in old_metrics


def _offset(snap, addr: str) -> int:  # type: ignore[no-untyped-def]
    return next((r.max_offset for r in snap.lives.values() if r.addr == addr), -1)


async def test_a_master_cut_off_from_etcd_stops_taking_writes(
    group: FailoverGroup, etcd: Etcd, client: RemotingClient
) -> None:
    master = await _ready(group, client)
    await _send_acked(client, master.addr, b"before")
    os.kill(etcd.popen.pid, signal.SIGSTOP)  # no renewal succeeds: the master's lease clock runs out
    try:
        async def fenced() -> bool:
            response = await send_v1(client, master.addr, TOPIC, b"while cut off")
            return response.code == ResponseCode.SERVICE_NOT_AVAILABLE

        await until(fenced, timeout=group.lease_seconds + 10)
        route = await _route_master(client, group.namesrv, group.broker_name)
        assert route in ("", master.addr)

        async def stepped_down() -> bool:  # past the lease's latest end it registers as a slave
            return await _route_master(client, group.namesrv, group.broker_name) == ""

        try:
            await until(stepped_down, timeout=group.lease_seconds + 40)
        except AssertionError:
            print("=====", master.output[-5000:])
            raise
    finally:
        os.kill(etcd.popen.pid, signal.SIGCONT)

    async def writable_again() -> bool:
        snap = await _state(group)
        if snap.master is None:
            return False
        response = await send_v1(client, snap.master.addr, TOPIC, b"healed")
        return response.code == ResponseCode.SUCCESS

    try:
        await until(writable_again, timeout=40)
    except AssertionError:
        for replica in group.replicas:
            print("=====", replica.name, replica.output[-4000:])
        raise


async def test_a_stalled_slave_leaves_the_in_sync_set_and_rejoins_once_caught_up(
    group: FailoverGroup, client: RemotingClient
) -> None:
    master = await _ready(group, client)
    slave = next(r for r in group.replicas if r is not master)
    assert slave.process is not None
    os.kill(slave.process.pid, signal.SIGSTOP)
    try:
        async def shrunk() -> bool:
            snap = await _state(group)
            return snap.state is not None and len(snap.state.sss) == 2
        await until(shrunk, timeout=30)
        # Without the stalled member the in-sync set acknowledges again.
        for i in range(5):
            await _send_acked(client, master.addr, b"while stalled %d" % i)
    finally:
        os.kill(slave.process.pid, signal.SIGCONT)
    await _in_sync(group, 3)  # caught up again: back in the set
    await _send_acked(client, master.addr, b"all three again")
