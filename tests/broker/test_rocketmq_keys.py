"""broker.conf files RocketMQ accepts start OrbitMQ; GET/UPDATE_BROKER_CONFIG work as RocketMQ's.

RocketMQ's BrokerStartup reads every key with MixAll.properties2Object into BrokerConfig,
MessageStoreConfig, NettyServerConfig and NettyClientConfig; AdminBrokerProcessor's
getBrokerConfig answers Configuration.getAllConfigsFormatString() and updateBrokerConfig calls
Configuration.update, which rewrites the -c file with every property (Configuration.persist).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.common.javaprops import parse_properties
from orbitmq.common.keycatalog import BROKER_KEYS
from orbitmq.errors import ConfigError
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.namesrv.server import NameServer
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import heartbeat_body, pull, records, request, send_v2
from tests.broker.test_messaging import queued
from tests.support.dev import broker_config
from tests.support.procs import orbitmq_command, start_server
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(90)

TUNING = """\
brokerClusterName=TuneCluster
brokerName=broker-tune
brokerId=0
deleteWhen=04
fileReservedTime=48
brokerRole=ASYNC_MASTER
flushDiskType=ASYNC_FLUSH
transientStorePoolEnable=true
useReentrantLockWhenPutMessage=true
transferMsgByHeap=false
sendMessageThreadPoolNums=16
pullMessageThreadPoolNums=64
serverWorkerThreads=16
flushCommitLogTimed=false
enableDLegerCommitLog=false
mapedFileSizeCommitLog=1048576
diskMaxUsedSpaceRatio=88
"""


def test_rocketmq_tuning_keys_are_accepted_and_each_is_reported_with_its_reason() -> None:
    config = BrokerConfig.from_properties(parse_properties(TUNING))
    ignored = dict(config.ignored_keys)
    assert set(ignored) == {
        "transientStorePoolEnable", "useReentrantLockWhenPutMessage", "transferMsgByHeap",
        "sendMessageThreadPoolNums", "pullMessageThreadPoolNums", "serverWorkerThreads",
        "flushCommitLogTimed", "enableDLegerCommitLog",
    }
    assert "transient store pool" in ignored["transientStorePoolEnable"]
    assert config.store.disk_max_used_space_ratio == 88
    assert config.store.file_reserved_time == 48


@pytest.mark.parametrize(
    "key, hint",
    [("transactionTimeout", "transactionTimeOut"), ("storePathIndexes", "storePathIndex"),
     ("sendMessageThreadPoolNum", "sendMessageThreadPoolNums"), ("fileReserveTime", "fileReservedTime")],
)
def test_a_key_unknown_to_rocketmq_too_is_an_error_naming_the_nearest_key(key: str, hint: str) -> None:
    with pytest.raises(ConfigError, match=f"{key}.*did you mean {hint}\\?"):
        BrokerConfig.from_properties({key: "1"})


@pytest.mark.parametrize(
    "key, value",
    [("sendMessageThreadPoolNums", "lots"), ("transientStorePoolEnable", "yes"),
     ("serverSocketBacklog", "3000000000"), ("consumerFallbehindThreshold", "1.5")],
)
def test_values_of_ignored_keys_are_checked_as_rocketmq_parses_them(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key):
        BrokerConfig.from_properties({key: value})


def test_get_config_shows_every_key_with_given_values_and_rocketmq_defaults() -> None:
    props = BrokerConfig.from_properties(parse_properties(TUNING)).to_properties()
    assert set(BROKER_KEYS) <= set(props)
    assert props["sendMessageThreadPoolNums"] == "16"
    assert props["transferMsgByHeap"] == "false"
    assert props["enableCalcFilterBitMap"] == "false"  # not given: RocketMQ's default
    assert props["fileReservedTime"] == "48"


def test_runtime_update_changes_store_keys_rocketmq_reads_live_and_refuses_the_others() -> None:
    config = BrokerConfig.from_properties(parse_properties(TUNING))
    updated = config.with_properties({"fileReservedTime": "6", "deleteWhen": "01;13", "diskMaxUsedSpaceRatio": "80",
                                      "maxTransferCountOnMessageInMemory": "64", "serverWorkerThreads": "4"})
    assert (updated.store.file_reserved_time, updated.store.delete_when) == (6, "01;13")
    assert updated.store.disk_max_used_space_ratio == 80
    assert dict(updated.rocketmq_only)["serverWorkerThreads"] == "4"
    # An update that repeats a start-time value (tools send whole configs) is no change.
    assert config.with_properties({"brokerName": "broker-tune"}).broker_name == "broker-tune"
    for key, value in [("mappedFileSizeCommitLog", "2097152"), ("storePathRootDir", "/elsewhere"),
                       ("flushDiskType", "SYNC_FLUSH"), ("listenPort", "1"), ("brokerName", "other"),
                       ("messageDelayLevel", "1s 2s"), ("flushConsumerOffsetInterval", "1000")]:
        with pytest.raises(ConfigError, match=f"{key}.*restart"):
            config.with_properties({key: value})


def test_the_rewritten_file_reads_back_to_the_same_settings() -> None:
    config = BrokerConfig.from_properties(parse_properties(TUNING) | {
        "brokerSecretKey": "s3cret", "brokerAccessKey": "a", "tls.server.keyPassword": "pw"})
    saved = config.file_properties()
    assert saved["brokerSecretKey"] == "s3cret" and saved["tls.server.keyPassword"] == "pw"
    assert "tls.server.keyPassword" not in config.to_properties(), "GET_BROKER_CONFIG never shows it"
    assert "enableCalcFilterBitMap" not in saved, "keys without effect that nobody set stay out"
    again = BrokerConfig.from_properties(saved)
    assert again.to_properties() == config.to_properties()
    assert sorted(again.ignored_keys) == sorted(config.ignored_keys)


async def test_a_rocketmq_broker_conf_starts_warns_and_persists_runtime_updates(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(TUNING + f"storePathConsumeQueue={tmp_path / 'cq'}\nstorePathIndex={tmp_path / 'idx'}\n")
    broker = start_server(orbitmq_command("broker", "-c", str(conf), "--listen", "127.0.0.1:0",
                                          "--store", str(tmp_path / "store")))
    try:
        warned = [line for line in broker.output if "WARNING" in line and "has no effect in OrbitMQ" in line]
        assert any("transientStorePoolEnable=true" in line and "transient store pool" in line for line in warned)
        assert len(warned) == 8, warned
        async with RemotingClient() as client:
            sent = await send_v2(client, broker.addr, "KeysTopic", b"hello", properties="KEYS\x01k1\x02")
            assert sent.code == ResponseCode.SUCCESS, sent.remark
            got = await pull(client, broker.addr, "KeysTopic", "CG", 0, queue_id=int(sent.field("queueId") or 0))
            assert [m.body for m in records(got)] == [b"hello"]
            assert (tmp_path / "cq" / "KeysTopic").is_dir()
            assert not (tmp_path / "store" / "consumequeue").exists()
            assert (tmp_path / "idx").is_dir()

            shown = await request(client, broker.addr, RequestCode.GET_BROKER_CONFIG)
            props = parse_properties(shown.body_bytes().decode())
            assert set(BROKER_KEYS) <= set(props)
            assert props["transientStorePoolEnable"] == "true"

            update = await request(client, broker.addr, RequestCode.UPDATE_BROKER_CONFIG,
                                   body=b"fileReservedTime=12\ndeleteWhen=02;14\nslaveReadEnable=true\n")
            assert update.code == ResponseCode.SUCCESS, update.remark
            shown = await request(client, broker.addr, RequestCode.GET_BROKER_CONFIG)
            props = parse_properties(shown.body_bytes().decode())
            assert (props["fileReservedTime"], props["deleteWhen"], props["slaveReadEnable"]) == ("12", "02;14", "true")
            saved = parse_properties(conf.read_text())
            assert (saved["fileReservedTime"], saved["deleteWhen"], saved["slaveReadEnable"]) == ("12", "02;14", "true")
            assert saved["transientStorePoolEnable"] == "true" and saved["brokerName"] == "broker-tune"

            # The running store reads the new pull limit (RocketMQ's getMessage reads it per call).
            for i in range(3):
                more = await send_v2(client, broker.addr, "KeysTopic", b"m%d" % i, queue_id=0)
                assert more.code == ResponseCode.SUCCESS
            before = await pull(client, broker.addr, "KeysTopic", "CG", 0, queue_id=0)
            assert len(records(before)) >= 3
            limit = await request(client, broker.addr, RequestCode.UPDATE_BROKER_CONFIG,
                                  body=b"maxTransferCountOnMessageInMemory=1\n")
            assert limit.code == ResponseCode.SUCCESS, limit.remark
            after = await pull(client, broker.addr, "KeysTopic", "CG", 0, queue_id=0)
            assert len(records(after)) == 1

            refused = await request(client, broker.addr, RequestCode.UPDATE_BROKER_CONFIG,
                                    body=b"mappedFileSizeCommitLog=2097152\n")
            assert refused.code == ResponseCode.SYSTEM_ERROR
            assert "mappedFileSizeCommitLog" in (refused.remark or "") and "restart" in (refused.remark or "")
            typo = await request(client, broker.addr, RequestCode.UPDATE_BROKER_CONFIG, body=b"fileReservedTim=1\n")
            assert typo.code == ResponseCode.SYSTEM_ERROR and "did you mean fileReservedTime" in (typo.remark or "")
            assert parse_properties(conf.read_text())["mappedFileSizeCommitLog"] == "1048576"
    finally:
        broker.stop()
    # The rewritten file starts the broker again, with the updated values.
    again = await asyncio.to_thread(subprocess.run, orbitmq_command("broker", "-c", str(conf), "-p"), check=True,
                                    capture_output=True, text=True, timeout=30)
    printed = parse_properties(again.stdout)
    assert printed["fileReservedTime"] == "12" and printed["storePathIndex"] == str(tmp_path / "idx")


def test_an_unknown_key_exits_2_with_a_suggestion(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\ntransactionTimeout=6000\n")
    done = subprocess.run(orbitmq_command("broker", "-c", str(conf)), check=False, capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 2
    assert "did you mean transactionTimeOut?" in done.stderr


async def test_broker_fast_failure_enable_false_lets_a_send_wait_at_the_gate(tmp_path: Path,
                                                                             client: RemotingClient) -> None:
    """BrokerFastFailure cleans the send queue only when brokerFastFailureEnable is on."""
    async with Broker(broker_config(tmp_path, waitTimeMillsInSendQueue="50", brokerFastFailureEnable="false")) as b:
        async with contextlib.AsyncExitStack() as held:
            for _ in range(b.send_gate.max_in_flight):  # take every slot so the send has to wait
                await held.enter_async_context(b.send_gate)
            waiting = asyncio.ensure_future(send_v2(client, b.broker_addr, "T", b"x"))
            await until(lambda: queued(b))
            await asyncio.sleep(0.1)  # longer than waitTimeMillsInSendQueue (the time is what is tested)
        r = await waiting
        assert r.code == ResponseCode.SUCCESS, r.remark


async def test_notify_consumer_ids_changed_enable_follows_the_live_config(tmp_path: Path,
                                                                         client: RemotingClient) -> None:
    """DefaultConsumerIdsChangeListener notifies only while notifyConsumerIdsChangedEnable is on."""
    async with Broker(broker_config(tmp_path, notifyConsumerIdsChangedEnable="false")) as b:
        notified: asyncio.Queue[str] = asyncio.Queue()

        async def on_notify(cmd: RemotingCommand, peer: object) -> None:
            notified.put_nowait(cmd.field("consumerGroup") or "")

        client.register(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, on_notify)
        for group in ("Quiet", "Loud"):
            await request(client, b.broker_addr, RequestCode.HEART_BEAT, body=heartbeat_body("c1", group, "T"))
        async with RemotingClient() as other:
            await request(other, b.broker_addr, RequestCode.HEART_BEAT, body=heartbeat_body("c2", "Quiet", "T"))
            on = await request(client, b.broker_addr, RequestCode.UPDATE_BROKER_CONFIG,
                               body=b"notifyConsumerIdsChangedEnable=true\n")
            assert on.code == ResponseCode.SUCCESS, on.remark
            await request(other, b.broker_addr, RequestCode.HEART_BEAT, body=heartbeat_body("c2", "Loud", "T"))
            # Notices go out in order on c1's connection: "Quiet" would come first had it been sent.
            assert await asyncio.wait_for(notified.get(), 5) == "Loud"


async def test_server_socket_backlog_reaches_the_listeners(tmp_path: Path) -> None:
    async with Broker(broker_config(tmp_path, serverSocketBacklog="77")) as b:
        assert b.server.backlog == 77
    config = NamesrvConfig.from_properties({"listenHost": "127.0.0.1", "listenPort": "0", "serverSocketBacklog": "33",
                                            "kvConfigPath": str(tmp_path / "kv.json")})
    async with NameServer(config) as ns:
        assert ns._server is not None and ns._server.backlog == 33


def test_rocketmq_home_locates_plain_acl_yml_unless_acl_config_path_is_given(tmp_path: Path) -> None:
    home = BrokerConfig.from_properties({"rocketmqHome": str(tmp_path / "rmq")})
    assert home.acl_file == str(tmp_path / "rmq" / "conf" / "plain_acl.yml")
    both = BrokerConfig.from_properties({"rocketmqHome": str(tmp_path / "rmq"), "aclConfigPath": str(tmp_path / "a.yml")})
    assert both.acl_file == str(tmp_path / "a.yml")


def test_slave_timeout_bounds_a_sync_masters_wait_for_its_slave(tmp_path: Path) -> None:
    """CommitLog.submitReplicaRequest waits MessageStoreConfig.slaveTimeout for the slave's ack."""
    from orbitmq.broker.ha.service import Replication

    config = BrokerConfig.from_properties({"brokerRole": "SYNC_MASTER", "slaveTimeout": "1500"})
    assert Replication(config, None).slave_timeout_s == 1.5  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="slaveTimeout"):
        BrokerConfig.from_properties({"slaveTimeout": "0"})
