"""A NameServer started by the CLI, spoken to with hand-built frames over a socket."""

from __future__ import annotations

import json
import signal
import struct
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.namesrv.rawframes import (
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    GET_BROKER_CLUSTER_INFO,
    GET_KV_CONFIG,
    GET_ROUTEINFO_BY_TOPIC,
    PUT_KV_CONFIG,
    REGISTER_BROKER,
    RawConnection,
    register_body,
    register_header,
)
from tests.support.procs import ServerProcess, eventually, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(60)

LEGACY_ROUTE = (
    b'{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster"}],'
    b'"filterServerTable":{},'
    b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
STANDARD_ROUTE = LEGACY_ROUTE.replace(b"{0:", b'{"0":')


def start_namesrv(tmp_path: Path, properties: str = "") -> ServerProcess:
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"kvConfigPath={tmp_path / 'kvConfig.json'}\n{properties}")
    return start_server(orbitmq_command("namesrv", "-c", str(conf), "--listen", "127.0.0.1:0"))


@pytest.fixture
def short_expiry_namesrv(tmp_path: Path) -> Iterator[ServerProcess]:
    server = start_namesrv(tmp_path, "brokerChannelExpiredTime=1500\nscanNotActiveBrokerInterval=200\n")
    try:
        yield server
    finally:
        server.stop()


def register(
    conn: RawConnection, topics: dict[str, tuple[int, int, int]] | None = None, **header: Any
) -> None:
    body = register_body(topics if topics is not None else {"T": (4, 4, 6)})
    response = conn.call(REGISTER_BROKER, register_header(**header), body)
    assert (response.code, response.remark) == (0, None)


def route(addr: str, topic: str, version: int = 407, **ext: str) -> tuple[int, str | None, bytes]:
    with RawConnection(addr) as conn:
        response = conn.call(GET_ROUTEINFO_BY_TOPIC, {"topic": topic, **ext}, version=version)
        return response.code, response.remark, response.body


def test_route_of_a_registered_topic_is_legacy_json_for_version_400(namesrv_process: ServerProcess) -> None:
    with RawConnection(namesrv_process.addr) as broker:
        register(broker)
        code, remark, body = route(namesrv_process.addr, "T", version=400)
        assert (code, remark) == (0, None)
        assert body == LEGACY_ROUTE


def test_route_is_standard_json_for_version_407(namesrv_process: ServerProcess) -> None:
    with RawConnection(namesrv_process.addr) as broker:
        register(broker)
        code, _, body = route(namesrv_process.addr, "T", version=407)
        assert code == 0
        assert body == STANDARD_ROUTE
        doc = json.loads(body)
        assert set(doc) == {"brokerDatas", "filterServerTable", "queueDatas"}
        assert doc["brokerDatas"][0] == {
            "brokerAddrs": {"0": "127.0.0.1:10911"},
            "brokerName": "broker-a",
            "cluster": "DefaultCluster",
        }


def test_old_clients_asking_for_standard_json_get_it(namesrv_process: ServerProcess) -> None:
    with RawConnection(namesrv_process.addr) as broker:
        register(broker)
        assert route(namesrv_process.addr, "T", version=317, acceptStandardJsonOnly="true")[2] == STANDARD_ROUTE


def test_unknown_topic_answers_topic_not_exist_with_rocketmq_remark(namesrv_process: ServerProcess) -> None:
    code, remark, body = route(namesrv_process.addr, "Nope")
    assert code == 17
    assert remark == "No topic route info in name server for the topic: Nope"
    assert body == b""


def test_route_disappears_after_the_broker_stops_heartbeating(short_expiry_namesrv: ServerProcess) -> None:
    addr = short_expiry_namesrv.addr
    broker = RawConnection(addr)
    try:
        register(broker)
        assert route(addr, "T")[0] == 0
        # The connection stays open but silent: only the expiry scan can remove the broker.
        eventually(lambda: route(addr, "T")[0] == 17, timeout=10, interval=0.2)
    finally:
        broker.close()
    eventually(lambda: any("silent for more than 1500 ms" in line for line in short_expiry_namesrv.output), timeout=10)


def test_heartbeats_keep_a_route_alive_past_the_expiry(short_expiry_namesrv: ServerProcess) -> None:
    addr = short_expiry_namesrv.addr
    with RawConnection(addr) as broker:
        # Heartbeats every 0.3 s for 3 s, twice the 1.5 s expiry.
        for _ in range(10):
            register(broker)
            assert route(addr, "T")[0] == 0
            time.sleep(0.3)


def test_closing_the_broker_connection_removes_its_routes_at_once(namesrv_process: ServerProcess) -> None:
    addr = namesrv_process.addr
    broker = RawConnection(addr)
    register(broker)
    assert route(addr, "T")[0] == 0
    broker.close()
    eventually(lambda: route(addr, "T")[0] == 17, timeout=5)


def test_cluster_info_is_always_legacy_json(namesrv_process: ServerProcess) -> None:
    with RawConnection(namesrv_process.addr) as broker:
        register(broker)
        register(broker, addr="127.0.0.2:10911", broker_id=1)
        response = broker.call(GET_BROKER_CLUSTER_INFO, version=407)
        assert response.code == 0
        assert response.body == (
            b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.2:10911"},'
            b'"brokerName":"broker-a","cluster":"DefaultCluster"}},'
            b'"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
        )


def test_kv_config_survives_a_restart(tmp_path: Path) -> None:
    server = start_namesrv(tmp_path)
    try:
        with RawConnection(server.addr) as conn:
            response = conn.call(PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"})
            assert response.code == 0
    finally:
        assert server.stop() == 0
    stored = json.loads((tmp_path / "kvConfig.json").read_bytes())
    assert stored == {"configTable": {"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}}}
    server = start_namesrv(tmp_path)
    try:
        with RawConnection(server.addr) as conn:
            response = conn.call(GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T"})
            assert (response.code, response.ext) == (0, {"value": "broker-a:4"})
    finally:
        server.stop()


def test_order_topic_conf_is_added_when_order_messages_are_enabled(tmp_path: Path) -> None:
    server = start_namesrv(tmp_path, "orderMessageEnable=true\n")
    try:
        with RawConnection(server.addr) as broker:
            broker.call(PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "T", "value": "broker-a:4"})
            body = register_body({"T": (4, 4, 6)})
            response = broker.call(REGISTER_BROKER, register_header(), body)
            # The registration answer carries the ORDER_TOPIC_CONFIG namespace as a KVTable.
            assert json.loads(response.body) == {"table": {"T": "broker-a:4"}}
            doc = json.loads(route(server.addr, "T")[2])
            assert doc["orderTopicConf"] == "broker-a:4"
    finally:
        server.stop()


def test_register_with_a_wrong_body_crc_is_refused(namesrv_process: ServerProcess) -> None:
    body = register_body({"T": (4, 4, 6)})
    good = zlib.crc32(body) & 0x7FFFFFFF
    with RawConnection(namesrv_process.addr) as broker:
        bad = broker.call(REGISTER_BROKER, register_header(bodyCrc32=str(good ^ 1)), body)
        assert (bad.code, bad.remark) == (1, "crc32 not match")
        assert route(namesrv_process.addr, "T")[0] == 17
        ok = broker.call(REGISTER_BROKER, register_header(bodyCrc32=str(good)), body)
        assert ok.code == 0
        assert route(namesrv_process.addr, "T")[0] == 0


def test_malformed_requests_get_system_error_and_the_server_keeps_serving(namesrv_process: ServerProcess) -> None:
    with RawConnection(namesrv_process.addr) as conn:
        missing = conn.call(REGISTER_BROKER, {"brokerName": "b"}, b"{}")
        assert missing.code == 1 and "brokerAddr" in (missing.remark or "")
        garbage = conn.call(REGISTER_BROKER, register_header(), b"{not json")
        assert garbage.code == 1 and "register body" in (garbage.remark or "")
        unknown = conn.call(9999)
        assert unknown.code == 3
        assert conn.call(GET_ALL_TOPIC_LIST_FROM_NAMESERVER).code == 0


def test_sigterm_and_sigint_stop_the_server_with_exit_code_0(tmp_path: Path) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        server = start_namesrv(tmp_path)
        assert server.stop(sig) == 0
        eventually(lambda s=server: any("namesrv shutting down" in line for line in s.output), timeout=10)


def test_a_binary_header_request_is_answered_in_the_binary_serialization(namesrv_process: ServerProcess) -> None:
    # GET_ROUTEINFO_BY_TOPIC for topic "T", opaque 1, version 407: the ROCKETMQ-serialized
    # frame of the protocol reference (§1.5), byte for byte.
    request = bytes.fromhex(
        "00000025" "01000021" "0069" "00" "0197" "00000001" "00000000" "00000000" "0000000c"
        "0005" "746f706963" "00000001" "54"
    )
    with RawConnection(namesrv_process.addr) as conn:
        conn.sock.sendall(request)
        frame = conn.read_frame()
    (word,) = struct.unpack(">i", frame[:4])
    assert word >> 24 == 1, "answered in the ROCKETMQ serialization"
    code, _language, _version, opaque, flag, remark_len = struct.unpack(">hBhiii", frame[4:21])
    assert (code, opaque, flag & 1) == (17, 1, 1)
    remark = frame[21 : 21 + remark_len].decode()
    assert remark == "No topic route info in name server for the topic: T"


def test_a_stale_master_epoch_from_another_address_is_refused(namesrv_process: ServerProcess) -> None:
    new, stale = "127.0.0.1:20911", "127.0.0.1:10911"
    with RawConnection(namesrv_process.addr) as epoch2, RawConnection(namesrv_process.addr) as epoch1:
        response = epoch2.call(REGISTER_BROKER, register_header(addr=new), register_body({"T": (4, 4, 6)}, state_version=2))
        assert (response.code, response.remark) == (0, None)
        response = epoch1.call(
            REGISTER_BROKER, register_header(addr=stale), register_body({"T": (8, 8, 6)}, counter=5, state_version=1)
        )
        assert response.code == 1  # SYSTEM_ERROR, with a remark the broker logs
        assert response.remark is not None and "stateVersion 1 refused" in response.remark and new in response.remark
        code, _, body = route(namesrv_process.addr, "T")
        assert code == 0
        doc = json.loads(body)
        assert doc["brokerDatas"][0]["brokerAddrs"] == {"0": new}
        assert doc["queueDatas"][0]["readQueueNums"] == 4
