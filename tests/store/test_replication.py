"""Slave replication at the store level: the master's CommitLog bytes, in arbitrary chunks,
rebuild the same queues on the slave."""

from __future__ import annotations

from pathlib import Path

from orbitmq.common.record import iter_records
from orbitmq.store.api import MessageStore
from orbitmq.store.config import BrokerRole
from orbitmq.store.store import DefaultMessageStore
from tests.store.conftest import StoreFactory
from tests.store.helpers import message, pulled, small_config


def replicate(master: MessageStore, slave: MessageStore, chunk: int) -> None:
    while slave.get_max_phy_offset() < master.get_max_phy_offset():
        data = master.get_commit_log_data(slave.get_max_phy_offset())
        assert data is not None
        with data:
            view = data.buffer
            for at in range(0, len(view), chunk):
                assert slave.append_to_commit_log(data.start_offset + at, view[at : at + chunk])


async def test_master_bytes_in_odd_chunks_rebuild_the_same_queues_on_the_slave(
    tmp_path: Path, make_store: StoreFactory
) -> None:
    master = make_store(small_config(tmp_path / "master"))
    slave_config = small_config(tmp_path / "slave", broker_role=BrokerRole.SLAVE)
    slave = make_store(slave_config)
    await master.start()
    await slave.start()
    try:
        heard: list[tuple[str, int, int]] = []
        slave.add_dispatch_listener(lambda t, q, o: heard.append((t, q, o)))
        for i in range(70):
            await master.put_message(message(body=b"%03d" % i + b"." * 300, queue_id=i % 2, keys=f"key{i}"))
        replicate(master, slave, chunk=333)
        assert slave.get_max_phy_offset() == master.get_max_phy_offset()
        for queue_id in (0, 1):
            assert pulled(slave, queue_id) == pulled(master, queue_id)
            assert slave.get_max_offset_in_queue("T", queue_id) == 35
        with slave.query_message("T", "key42", 4, 0, 2**62) as found:
            assert [r.body[:3] for r in iter_records(found.buffers[0])] == [b"042"]
        assert not slave.append_to_commit_log(0, b"late"), "data that does not continue the log is refused"
        assert not master.append_to_commit_log(master.get_max_phy_offset(), b"x"), "a master takes no replicas"
    finally:
        await slave.close()
        await master.close()
    assert heard and heard[-1][2] == 35
    if not isinstance(slave, DefaultMessageStore):
        return  # the in-memory store keeps nothing across a restart
    async with DefaultMessageStore(slave_config) as slave:
        assert slave.get_max_offset_in_queue("T", 1) == 35
        assert len(pulled(slave, 1)) == 35
