"""Controller mode replication on 127.0.0.1: epochs in the HA stream, truncation of an old
master's unreplicated tail when it follows the new master, a hard stop when no epoch
matches, and the ack rule of the in-sync set (client and internal writes)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.ha.protocol import (
    DataDecoder,
    SlaveHello,
    encode_ack,
    encode_slave_hello,
    read_master_hello,
)
from orbitmq.broker.ha.service import Replication
from orbitmq.broker.ha.writes import ReplicatedWrites
from orbitmq.common.message import Message, MessageExtBatch
from orbitmq.common.record import encode_batch
from orbitmq.store.api import PutMessageStatus
from orbitmq.store.config import BrokerRole
from orbitmq.store.epochs import EpochEntry, EpochError
from orbitmq.store.store import DefaultMessageStore
from tests.store.helpers import BORN_HOST, STORE_HOST, bodies, message, small_config

pytestmark = pytest.mark.timeout(60)


@asynccontextmanager
async def replica(
    root: Path, broker_id: int, role: BrokerRole = BrokerRole.SLAVE, controller_mode: bool = True,
    ha_secret: str = "", **store: object
) -> AsyncIterator[Replication]:
    """A store plus its replication, by default in controller mode (neither leading nor following yet)."""
    store_config = small_config(root, broker_role=role, ha_listen_port=0, ha_send_heartbeat_interval=200, **store)
    config = BrokerConfig(store=store_config, broker_id=broker_id, listen_port=0, ha_secret=ha_secret)
    st = DefaultMessageStore(store_config)
    await st.start()
    rep = Replication(config, st, controller_mode=controller_mode)
    rep.slave_timeout_s = 0.5
    await rep.start("127.0.0.1", "127.0.0.1")
    try:
        yield rep
    finally:
        await rep.close()
        await st.close()


def store_of(rep: Replication) -> DefaultMessageStore:
    assert isinstance(rep.store, DefaultMessageStore)
    return rep.store


def ha_addr(rep: Replication) -> str:
    assert rep.master is not None and rep.master.address is not None
    return f"127.0.0.1:{rep.master.address[1]}"


async def until(cond: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not cond():
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.02)


async def put(rep: Replication, body: bytes, queue_id: int = 0) -> tuple[int, PutMessageStatus]:
    """Put one message and wait for replicas as a send does; (end offset, status)."""
    result = await rep.store.put_message(message(body=body, queue_id=queue_id))
    assert result.append_result is not None, result
    end = result.append_result.wrote_offset + result.append_result.wrote_bytes
    return end, await rep.wait_for_slave(end)


async def test_an_old_master_with_an_unreplicated_tail_truncates_and_resyncs_in_the_new_epoch(tmp_path: Path) -> None:
    async with (
        replica(tmp_path / "a", 1, all_ack_in_sync_state_set=True) as a,
        replica(tmp_path / "b", 2, all_ack_in_sync_state_set=True) as b,
    ):
        # Epoch 1: A leads, B follows and is in the in-sync set, so A's sends wait for it.
        assert await a.promote(1) == 0
        a.in_sync_set.set([2])
        await b.follow(ha_addr(a), 1)
        await until(lambda: 2 in a.replicas(), "B connected")
        for i in range(20):
            _, status = await put(a, b"e1-%02d" % i)
            assert status is PutMessageStatus.PUT_OK
        shared_end = a.store.get_max_phy_offset()
        await until(lambda: b.store.get_max_phy_offset() == shared_end, "B holds epoch 1")
        assert store_of(b).epochs.entries == [EpochEntry(1, 0)]
        assert b.replicas() == {} and a.replicas()[2].acked == shared_end
        # B is cut off; A takes 5 more writes that nobody acknowledges.
        assert b.slave is not None
        await b.slave.close()
        for i in range(5):
            _, status = await put(a, b"tail-%d" % i)
            assert status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        assert a.confirm_offset == shared_end, "the unacknowledged tail is not confirmed"
        # A dies; B is elected in epoch 2 and takes writes.
        await a.close()
        start = await b.promote(2)
        assert start == shared_end
        assert store_of(b).epochs.entries == [EpochEntry(1, 0), EpochEntry(2, shared_end)]
        b.in_sync_set.set([])
        for i in range(7):
            _, status = await put(b, b"e2-%d" % i)
            assert status is PutMessageStatus.PUT_OK, "an empty in-sync set acknowledges at once"
        with pytest.raises(EpochError):
            await b.promote(1)
        # A returns and follows B: its tail goes, epoch 2 comes in.
        await a.follow(ha_addr(b), 2)
        await until(lambda: a.store.get_max_phy_offset() == b.store.get_max_phy_offset(), "A caught up with B")
        assert a.slave is not None and a.slave.truncated_bytes > 0
        assert store_of(a).epochs.entries == store_of(b).epochs.entries
        expected = [b"e1-%02d" % i for i in range(20)] + [b"e2-%d" % i for i in range(7)]
        assert bodies(store_of(a)) == bodies(store_of(b)) == expected
        await until(lambda: 1 in b.replicas() and b.replicas()[1].acked == b.store.get_max_phy_offset(), "B saw A's ack")
        # A rejoins the in-sync set: B's sends wait for it again, and A sees B's confirm offset.
        b.in_sync_set.set([1])
        end, status = await put(b, b"e2-last")
        assert status is PutMessageStatus.PUT_OK
        await until(lambda: a.confirm_offset == end, "A learned the confirm offset")
        with pytest.raises(EpochError):
            await a.follow(ha_addr(b), 1)


async def test_a_replica_sharing_no_epoch_with_the_master_stops_with_a_clear_error(tmp_path: Path) -> None:
    async with replica(tmp_path / "m", 1) as master, replica(tmp_path / "r", 2) as stray:
        await master.promote(3)
        await put(master, b"m")
        # The stray replica once led epoch 3 from another offset: a different history.
        stray_store = store_of(stray)
        stray_store.set_role(BrokerRole.SYNC_MASTER)
        for i in range(3):
            await stray_store.put_message(message(body=b"s%d" % i))
        stray_store.epochs.replace([EpochEntry(2, 0), EpochEntry(3, 100)])
        before = stray_store.get_max_phy_offset()
        await stray.follow(ha_addr(master), 3)
        await until(lambda: bool(stray.follow_failed), "replication gave up")
        assert "wipe" in stray.follow_failed and "epoch 3 from 100" in stray.follow_failed
        assert stray_store.get_max_phy_offset() == before, "nothing was cut"


async def test_a_follower_refuses_a_master_of_an_older_epoch(tmp_path: Path) -> None:
    async with replica(tmp_path / "m", 1) as master, replica(tmp_path / "r", 2) as follower:
        await master.promote(1)
        await put(master, b"old term")
        await follower.follow(ha_addr(master), 2)
        await until(lambda: follower.slave is not None and "older than epoch 2" in follower.slave.last_error, "refused")
        assert follower.store.get_max_phy_offset() == 0


async def test_internal_writes_wait_for_the_in_sync_set(tmp_path: Path) -> None:
    async with (
        replica(tmp_path / "m", 1, all_ack_in_sync_state_set=True) as master,
        replica(tmp_path / "s", 2) as slave,
    ):
        await master.promote(1)
        internal = ReplicatedWrites(master.store, lambda: master).as_store()
        master.in_sync_set.set([2])  # a member that is not connected: puts cannot be acknowledged
        result = await internal.put_message(message(body=b"delayed delivery"))
        assert result.status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        assert result.is_ok, "stored all the same"
        await slave.follow(ha_addr(master), 1)
        await until(lambda: 2 in master.replicas(), "the slave connected")
        result = await internal.put_message(message(body=b"after the slave came"))
        assert result.status is PutMessageStatus.PUT_OK
        assert slave.store.get_max_phy_offset() == master.store.get_max_phy_offset()
        master.in_sync_set.set(None)
        no_wait = message(body=b"no wait")
        no_wait.wait_store = False
        assert (await internal.put_message(no_wait)).status is PutMessageStatus.PUT_OK


async def test_min_in_sync_replicas_refuses_internal_writes_before_storing_them(tmp_path: Path) -> None:
    async with replica(tmp_path / "m", 1, min_in_sync_replicas=2) as master:
        await master.promote(1)
        internal = ReplicatedWrites(master.store, lambda: master).as_store()
        master.in_sync_set.set([])
        assert not master.enough_replicas()
        refusal = master.put_refusal()
        assert refusal is not None and refusal.status is PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH
        for put_one in (
            lambda: internal.put_message(message(body=b"alone")),
            lambda: internal.put_messages(MessageExtBatch(
                topic="T", queue_id=0, body=encode_batch([Message("T", b"one"), Message("T", b"two")]),
                born_timestamp=1, born_host=BORN_HOST, store_host=STORE_HOST, wait_store=True,
            )),
        ):
            result = await put_one()
            assert result.status is PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH
            assert not result.is_ok and "minInSyncReplicas is 2" in result.remark
            assert master.store.get_max_phy_offset() == 0, "a refused put leaves nothing behind"
            assert master.store.get_max_offset_in_queue("T", 0) == 0
        no_wait = message(body=b"does not wait for replicas")
        no_wait.wait_store = False  # RocketMQ checks only puts that wait (needHandleHA)
        assert (await internal.put_message(no_wait)).status is PutMessageStatus.PUT_OK
        master.in_sync_set.set([2])
        assert master.enough_replicas() and master.put_refusal() is None




async def test_the_master_speaks_rocketmq5s_frames_and_no_batch_spans_two_epochs(tmp_path: Path) -> None:
    async with replica(tmp_path / "m", 1) as master:
        await master.promote(1)
        for i in range(5):
            await put(master, b"one-%d" % i)
        await master.promote(2)
        boundary = master.store.get_max_phy_offset()
        assert boundary % small_config(tmp_path).mapped_file_size_commit_log, "the boundary is inside a file"
        for i in range(5):
            await put(master, b"two-%d" % i)
        end = master.store.get_max_phy_offset()
        reader, writer = await asyncio.open_connection("127.0.0.1", int(ha_addr(master).rsplit(":", 1)[1]))
        try:
            writer.write(encode_slave_hello(SlaveHello(7)))
            hello = await read_master_hello(lambda n: asyncio.wait_for(reader.readexactly(n), 10))
            assert (hello.max_offset, hello.last_epoch, hello.epochs) == (end, 2, ((1, 0), (2, boundary)))
            writer.write(encode_ack(0))
            decoder = DataDecoder(1 << 20)
            frames = []
            offset = 0
            while offset < end:
                for frame in decoder.feed(await asyncio.wait_for(reader.read(1 << 16), 10)):
                    assert frame.offset == offset
                    frames.append((frame.offset, len(frame.data), frame.epoch, frame.epoch_start))
                    offset += len(frame.data)
            for start, size, epoch, epoch_start in frames:
                if size:
                    assert (epoch, epoch_start) == ((1, 0) if start < boundary else (2, boundary))
                    assert start >= boundary or start + size <= boundary, "a batch spans two epochs"
            assert await_acked(master, 7) == 0
        finally:
            writer.close()


def await_acked(master: Replication, broker_id: int) -> int:
    return master.replicas()[broker_id].acked


async def test_a_4x_sync_master_with_in_sync_replicas_3_waits_for_two_slaves(tmp_path: Path) -> None:
    async with replica(
        tmp_path / "m", 0, BrokerRole.SYNC_MASTER, controller_mode=False, in_sync_replicas=3
    ) as master:
        addr = ha_addr(master)
        async with replica(tmp_path / "s1", 1, controller_mode=False, ha_master_address=addr) as s1:
            await until(lambda: master.master is not None and master.master.connections == 1, "one slave connected")
            _, status = await put(master, b"one copy")
            assert status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
            async with replica(tmp_path / "s2", 2, controller_mode=False, ha_master_address=addr) as s2:
                await until(lambda: master.master is not None and master.master.connections == 2, "two slaves")
                _, status = await put(master, b"three copies")
                assert status is PutMessageStatus.PUT_OK
                end = master.store.get_max_phy_offset()
                assert s1.store.get_max_phy_offset() == end and s2.store.get_max_phy_offset() == end


async def test_with_all_ack_consumers_see_only_what_the_in_sync_set_holds(tmp_path: Path) -> None:
    async with (
        replica(tmp_path / "m", 1, all_ack_in_sync_state_set=True) as master,
        replica(tmp_path / "s", 2) as slave,
    ):
        await master.promote(1)
        _, status = await put(master, b"before the set")
        assert status is PutMessageStatus.PUT_OK
        master.in_sync_set.set([2])
        assert bodies(store_of(master)) == [b"before the set"], "a new master's own log is confirmed"
        woken: list[tuple[str, int, int]] = []
        master.store.add_dispatch_listener(lambda t, q, o: woken.append((t, q, o)))
        _, status = await put(master, b"unconfirmed")
        assert status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        assert bodies(store_of(master)) == [b"before the set"], "not served before the in-sync set holds it"
        with master.store.get_message("g", "T", 0, 1, 32) as got:
            assert got.status.value == "OFFSET_OVERFLOW_ONE" and got.next_begin_offset == 1
        woken.clear()
        await slave.follow(ha_addr(master), 1)
        await until(lambda: bodies(store_of(master)) == [b"before the set", b"unconfirmed"], "the slave confirmed it")
        assert ("T", 0, 2) in woken, "parked pulls are woken when their message is confirmed"
        assert master.confirm_offset == master.store.get_max_phy_offset()
        await until(lambda: bodies(store_of(slave)) == [b"before the set", b"unconfirmed"], "the slave serves it")


async def test_ha_authentication_runs_before_the_controller_handshake(tmp_path: Path) -> None:
    async with (
        replica(tmp_path / "m", 1, ha_secret="group secret") as master,
        replica(tmp_path / "bad", 2, ha_secret="wrong") as intruder,
        replica(tmp_path / "good", 3, ha_secret="group secret") as friend,
    ):
        await master.promote(1)
        await put(master, b"for friends")
        await intruder.follow(ha_addr(master), 1)
        await friend.follow(ha_addr(master), 1)
        await until(lambda: friend.store.get_max_phy_offset() == master.store.get_max_phy_offset(), "the friend copied")
        await until(lambda: intruder.slave is not None and bool(intruder.slave.last_error), "the intruder was refused")
        assert intruder.store.get_max_phy_offset() == 0
        assert 2 not in master.replicas() and 3 in master.replicas()
