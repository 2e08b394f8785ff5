"""Delay levels: SCHEDULE_TOPIC_XXXX, delivery back to the real topic, delayOffset.json across restarts."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from orbitmq.broker.schedule import DELAY_OFFSET_FILE, parse_delay_levels
from orbitmq.broker.server import Broker
from orbitmq.common import jsonbody, names
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import Message
from orbitmq.common.record import encode_batch
from orbitmq.errors import ConfigError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import props, send_v2
from tests.broker_features.inproc import addr_of, create_topic, drain, make_config

pytestmark = pytest.mark.timeout(60)


def test_delay_level_tables_accept_seconds_minutes_hours_and_days() -> None:
    assert parse_delay_levels("1s 5s 1m 2h 1d") == (1000, 5000, 60_000, 7_200_000, 86_400_000)
    assert len(parse_delay_levels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h")) == 18


@pytest.mark.parametrize("table", ["", "1x", "5", "1s 0s", "s1"])
def test_a_malformed_delay_level_table_is_a_config_error(tmp_path: Path, table: str) -> None:
    with pytest.raises(ConfigError, match="messageDelayLevel"):
        make_config(tmp_path, messageDelayLevel=table)


async def test_a_level_two_message_arrives_after_its_delay_and_within_a_second_of_it(
    tmp_path: Path, client: RemotingClient
) -> None:
    async with Broker(make_config(tmp_path)) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "Delayed")
        sent_ms = int(time.time() * 1000)
        response = await send_v2(client, addr, "Delayed", b"later", props(TAGS="TagA", DELAY="2", color="red"))
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert broker.store is not None
        assert broker.store.get_max_offset_in_queue("Delayed", 0) == 0
        assert broker.store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, 1) == 1

        got = await drain(client, addr, "Delayed", "G", 1, timeout=10, subscription="TagA")
        assert len(got) == 1
        arrived, msg = got[0]
        scheduled = broker.store.look_message_by_offset(
            broker.store.get_commit_log_offset_in_queue(names.SCHEDULE_TOPIC, 1, 0)
        )
        assert scheduled is not None
        due_ms = scheduled.store_timestamp + 2000
        assert msg.store_timestamp >= due_ms >= sent_ms + 2000
        assert arrived * 1000 - due_ms < 1000
        assert msg.body == b"later"
        assert msg.tags == "TagA"
        assert msg.properties["color"] == "red"
        assert msg.properties["REAL_TOPIC"] == "Delayed"
        assert "DELAY" not in msg.properties
        assert msg.born_timestamp == scheduled.born_timestamp


async def test_the_schedule_queue_tag_slot_holds_the_delivery_time(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(make_config(tmp_path)) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "Slots")
        before = int(time.time() * 1000)
        await send_v2(client, addr, "Slots", b"x", props(DELAY="3", TAGS="T"))
        after = int(time.time() * 1000)
        store = broker.store
        codes: list[int] = []

        class Capture:
            def is_matched_by_consume_queue(self, tags_code: int) -> bool:
                codes.append(tags_code)
                return True

            def is_matched_by_commit_log(self, record: memoryview, properties: object) -> bool:
                return True

        assert store is not None
        store.get_message("G", names.SCHEDULE_TOPIC, 2, 0, 1, Capture()).release()
        assert before + 3000 <= codes[0] <= after + 3000
        assert codes[0] != tag_hash_code("T")


async def test_a_level_above_the_table_waits_in_the_last_level(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(make_config(tmp_path)) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "Clamp")
        assert (await send_v2(client, addr, "Clamp", b"x", props(DELAY="40"))).code == ResponseCode.SUCCESS
        assert broker.store is not None
        assert broker.store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, 2) == 1
        got = await drain(client, addr, "Clamp", "G", 1, timeout=10)
        assert got[0][1].properties["REAL_QID"] == "0"


async def test_batches_asking_for_a_delay_or_a_time_are_refused(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(make_config(tmp_path)) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "Batch")
        body = encode_batch([Message("Batch", b"a"), Message("Batch", b"b")])
        for extra in (props(DELAY="1"), props(TIMER_DELAY_MS="500")):
            response = await send_v2(client, addr, "Batch", body, extra, code=RequestCode.SEND_BATCH_MESSAGE)
            assert response.code == ResponseCode.MESSAGE_ILLEGAL
            assert "does not support" in (response.remark or "")


async def test_prepared_transaction_messages_keep_no_delay(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(make_config(tmp_path)) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "Half")
        response = await send_v2(client, addr, "Half", b"half", props(DELAY="1", TRAN_MSG="true", PGROUP="P"), f="4")
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert broker.store is not None
        assert broker.store.get_max_offset_in_queue(names.SCHEDULE_TOPIC, 0) == 0
        stored = broker.store.look_message_by_offset(0)
        assert stored is not None and stored.body == b"half"
        assert stored.topic != names.SCHEDULE_TOPIC
        assert "DELAY" not in stored.properties


async def test_delivery_progress_survives_a_restart_without_duplicates_or_losses(
    tmp_path: Path, client: RemotingClient
) -> None:
    config = make_config(tmp_path)
    async with Broker(config) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "Restart")
        for i in range(5):
            await send_v2(client, addr, "Restart", f"one-{i}".encode(), props(DELAY="1"))
            await send_v2(client, addr, "Restart", f"three-{i}".encode(), props(DELAY="3"))
        got = await drain(client, addr, "Restart", "G", 5, timeout=5)
        assert sorted(m.body for _, m in got) == [f"one-{i}".encode() for i in range(5)]
    saved = jsonbody.loads(Path(config.store.config_dir, DELAY_OFFSET_FILE).read_text())
    assert jsonbody.int_keys(saved["offsetTable"]) == {1: 5, 2: 0, 3: 0}
    assert "{1:5" in Path(config.store.config_dir, DELAY_OFFSET_FILE).read_text().replace("\n", "").replace("\t", "")

    async with Broker(config) as broker:
        addr = addr_of(broker)
        got = await drain(client, addr, "Restart", "G", 11, timeout=6)
        bodies = sorted(m.body for _, m in got)
        assert bodies == sorted([f"one-{i}".encode() for i in range(5)] + [f"three-{i}".encode() for i in range(5)])


async def test_an_unreadable_delay_offset_file_falls_back_to_its_backup_and_else_stops_the_broker(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path)
    path = Path(config.store.config_dir, DELAY_OFFSET_FILE)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    Path(str(path) + ".bak").write_text('{"offsetTable":{1:3,2:0,3:0}}')
    async with Broker(config) as broker:
        assert broker.schedule is not None and broker.schedule.offsets[1] == 3
    path.write_text("{not json")
    Path(str(path) + ".bak").write_text("[]")
    with pytest.raises(ConfigError, match=DELAY_OFFSET_FILE):
        await Broker(config).start()
