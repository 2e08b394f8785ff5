"""Every NameServer request code against an embedded NameServer on 127.0.0.1, port 0."""

from __future__ import annotations

import asyncio
import re
import zlib
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from orbitmq.common.jsonbody import loads
from orbitmq.errors import ConfigError
from orbitmq.namesrv import NameServer, NamesrvConfig
from orbitmq.namesrv.bodies import encode_compressed_register_body
from orbitmq.namesrv.routes import DataVersion, TopicConfig
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.transport import RemotingClient

pytestmark = pytest.mark.timeout(30)

V1 = DataVersion(1, 1)


class Namesrv:
    """An embedded NameServer and a client connected to it."""

    def __init__(self, ns: NameServer, client: RemotingClient, addr: str) -> None:
        self.ns = ns
        self.client = client
        self.addr = addr

    async def call(
        self, code: int, ext: dict[str, str] | None = None, body: bytes | None = None, version: int = 407
    ) -> RemotingCommand:
        cmd = RemotingCommand.request(code, ext, body)
        cmd.version = version
        return await self.client.invoke(self.addr, cmd, timeout=5)

    async def register(
        self,
        topics: dict[str, TopicConfig] | None = None,
        *,
        name: str = "broker-a",
        addr: str = "127.0.0.1:10911",
        cluster: str = "DefaultCluster",
        broker_id: int = 0,
        version: DataVersion = V1,
    ) -> RemotingCommand:
        table = {
            t.topic_name: {
                "order": t.order, "perm": t.perm, "readQueueNums": t.read_queue_nums,
                "topicFilterType": t.topic_filter_type, "topicName": t.topic_name,
                "topicSysFlag": t.topic_sys_flag, "writeQueueNums": t.write_queue_nums,
            }
            for t in (topics or {"T": TopicConfig("T", 4, 4)}).values()
        }
        body = orjson.dumps({
            "filterServerList": [],
            "topicConfigSerializeWrapper": {
                "dataVersion": {"counter": version.counter, "timestamp": version.timestamp},
                "topicConfigTable": table,
            },
        })
        return await self.call(RequestCode.REGISTER_BROKER, broker_header(name, addr, cluster, broker_id), body)


def broker_header(name: str, addr: str, cluster: str = "DefaultCluster", broker_id: int = 0) -> dict[str, str]:
    return {
        "brokerName": name, "brokerAddr": addr, "clusterName": cluster,
        "haServerAddr": addr.rsplit(":", 1)[0] + ":10912", "brokerId": str(broker_id),
    }


@pytest.fixture
async def namesrv(tmp_path: Path) -> AsyncIterator[Namesrv]:
    config = NamesrvConfig(listen_host="127.0.0.1", listen_port=0, kv_config_path=str(tmp_path / "kv.json"))
    async with NameServer(config) as ns, RemotingClient() as client:
        host, port = ns.address
        yield Namesrv(ns, client, f"{host}:{port}")


async def test_slave_registration_is_told_its_master_and_ha_address(namesrv: Namesrv) -> None:
    await namesrv.register()
    response = await namesrv.register(addr="127.0.0.2:10911", broker_id=1)
    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields == {"masterAddr": "127.0.0.1:10911", "haServerAddr": "127.0.0.1:10912"}
    master = await namesrv.register()
    assert not master.ext_fields


async def test_compressed_registration_is_understood(namesrv: Namesrv) -> None:
    body = encode_compressed_register_body(DataVersion(5, 2), [TopicConfig("Z", 2, 3, 6)], [])
    header = broker_header("broker-z", "127.0.0.9:10911")
    header.update(compressed="true", bodyCrc32=str(zlib.crc32(body) & 0x7FFFFFFF))
    assert (await namesrv.call(RequestCode.REGISTER_BROKER, header, body)).code == ResponseCode.SUCCESS
    route = await namesrv.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Z"})
    assert orjson.loads(route.body_bytes())["queueDatas"] == [
        {"brokerName": "broker-z", "perm": 6, "readQueueNums": 2, "topicSysFlag": 0, "writeQueueNums": 3}
    ]


async def test_truncated_compressed_registration_is_a_system_error(namesrv: Namesrv) -> None:
    header = broker_header("broker-z", "127.0.0.9:10911")
    header["compressed"] = "true"
    response = await namesrv.call(RequestCode.REGISTER_BROKER, header, zlib.compress(b"\x00\x00\x00\x10{}"))
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "compressed register body" in (response.remark or "")


async def test_registration_without_body_registers_the_broker_only(namesrv: Namesrv) -> None:
    header = broker_header("bare", "127.0.0.5:10911", cluster="C2")
    assert (await namesrv.call(RequestCode.REGISTER_BROKER, header)).code == ResponseCode.SUCCESS
    info = loads((await namesrv.call(RequestCode.GET_BROKER_CLUSTER_INFO)).body_bytes())
    assert info["clusterAddrTable"] == {"C2": ["bare"]}


async def test_unregister_removes_the_route(namesrv: Namesrv) -> None:
    await namesrv.register()
    ext = broker_header("broker-a", "127.0.0.1:10911")
    del ext["haServerAddr"]
    assert (await namesrv.call(RequestCode.UNREGISTER_BROKER, ext)).code == ResponseCode.SUCCESS
    response = await namesrv.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    assert response.code == ResponseCode.TOPIC_NOT_EXIST


async def test_query_data_version_reports_changes_and_returns_our_copy(namesrv: Namesrv) -> None:
    await namesrv.register(version=DataVersion(100, 7))
    ext = broker_header("broker-a", "127.0.0.1:10911")
    same = await namesrv.call(RequestCode.QUERY_DATA_VERSION, ext, b'{"counter":7,"timestamp":100}')
    assert same.ext_fields == {"changed": "false"}
    assert orjson.loads(same.body_bytes()) == {"counter": 7, "timestamp": 100}
    newer = await namesrv.call(RequestCode.QUERY_DATA_VERSION, ext, b'{"counter":8,"timestamp":101}')
    assert newer.ext_fields == {"changed": "true"}
    unknown = await namesrv.call(
        RequestCode.QUERY_DATA_VERSION, broker_header("x", "127.0.0.3:1"), b'{"counter":1,"timestamp":1}'
    )
    assert unknown.ext_fields == {"changed": "true"} and unknown.body_bytes() == b""


async def test_topic_lists(namesrv: Namesrv) -> None:
    await namesrv.register({"A": TopicConfig("A"), "B": TopicConfig("B")})
    await namesrv.register({"C": TopicConfig("C")}, name="broker-c", addr="127.0.0.3:10911", cluster="Other")
    all_topics = loads((await namesrv.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)).body_bytes())
    assert sorted(all_topics["topicList"]) == ["A", "B", "C"] and set(all_topics) == {"topicList"}
    by_cluster = await namesrv.call(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "Other"})
    assert loads(by_cluster.body_bytes()) == {"topicList": ["C"]}
    system = loads((await namesrv.call(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS)).body_bytes())
    assert sorted(system["topicList"]) == ["DefaultCluster", "Other", "broker-a", "broker-c"]
    assert system["brokerAddr"] in ("127.0.0.1:10911", "127.0.0.3:10911")
    for code in (
        RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ):
        response = await namesrv.call(code)
        assert (response.code, response.body_bytes()) == (ResponseCode.SUCCESS, b'{"topicList":[]}')


async def test_write_permission_is_wiped_and_added_back(namesrv: Namesrv) -> None:
    await namesrv.register({"A": TopicConfig("A"), "B": TopicConfig("B")})
    wiped = await namesrv.call(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert wiped.ext_fields == {"wipeTopicCount": "2"}
    route = orjson.loads((await namesrv.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "A"})).body_bytes())
    assert route["queueDatas"][0]["perm"] == 4
    added = await namesrv.call(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert added.ext_fields == {"addTopicCount": "2"}
    route = orjson.loads((await namesrv.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "A"})).body_bytes())
    assert route["queueDatas"][0]["perm"] == 6


async def test_delete_topic_in_namesrv(namesrv: Namesrv) -> None:
    await namesrv.register({"A": TopicConfig("A")})
    await namesrv.register({"A": TopicConfig("A")}, name="broker-o", addr="127.0.0.4:10911", cluster="Other")
    await namesrv.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "A", "clusterName": "Other"})
    route = orjson.loads((await namesrv.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "A"})).body_bytes())
    assert [q["brokerName"] for q in route["queueDatas"]] == ["broker-a"]
    assert (await namesrv.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "A"})).code == ResponseCode.SUCCESS
    response = await namesrv.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "A"})
    assert response.code == ResponseCode.TOPIC_NOT_EXIST


async def test_kv_config_put_get_list_delete(namesrv: Namesrv, tmp_path: Path) -> None:
    put = await namesrv.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
    assert put.code == ResponseCode.SUCCESS
    assert orjson.loads((tmp_path / "kv.json").read_bytes()) == {"configTable": {"ns": {"k": "v"}}}
    got = await namesrv.call(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
    assert got.ext_fields == {"value": "v"}
    listed = await namesrv.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
    assert orjson.loads(listed.body_bytes()) == {"table": {"k": "v"}}
    await namesrv.call(RequestCode.DELETE_KV_CONFIG, {"namespace": "ns", "key": "k"})
    missing = await namesrv.call(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
    assert (missing.code, missing.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: ns Key: k")
    empty = await namesrv.call(RequestCode.GET_KVLIST_BY_NAMESPACE, {"namespace": "ns"})
    assert (empty.code, empty.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: ns")
    assert orjson.loads((tmp_path / "kv.json").read_bytes()) == {"configTable": {}}


async def test_put_kv_config_without_a_value_is_refused(namesrv: Namesrv) -> None:
    response = await namesrv.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k"})
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "the custom field <value> is null")


async def test_namesrv_config_is_read_and_updated_as_properties_text(namesrv: Namesrv) -> None:
    text = (await namesrv.call(RequestCode.GET_NAMESRV_CONFIG)).body_bytes().decode()
    assert "orderMessageEnable=false\n" in text and "listenPort=" in text
    updated = await namesrv.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
    assert updated.code == ResponseCode.SUCCESS
    assert namesrv.ns.config.order_message_enable is True
    text = (await namesrv.call(RequestCode.GET_NAMESRV_CONFIG)).body_bytes().decode()
    assert "orderMessageEnable=true\n" in text


async def test_namesrv_config_update_with_bad_keys_changes_nothing(namesrv: Namesrv) -> None:
    before = namesrv.ns.config
    bad = await namesrv.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\nnoSuchKey=1\n")
    assert (bad.code, bad.remark) == (ResponseCode.SYSTEM_ERROR, "unknown namesrv config key: noSuchKey")
    fixed = await namesrv.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/elsewhere\n")
    assert fixed.code == ResponseCode.SYSTEM_ERROR and "kvConfigPath" in (fixed.remark or "")
    assert namesrv.ns.config == before


async def test_expiry_settings_updated_at_runtime_reach_the_route_table(namesrv: Namesrv) -> None:
    await namesrv.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"brokerChannelExpiredTime=5000\n")
    assert namesrv.ns.routes.default_expiry_ms == 5000


async def test_closing_the_connection_removes_the_brokers_registered_over_it(namesrv: Namesrv) -> None:
    await namesrv.register()
    namesrv.client.close_connection(namesrv.addr)
    async with RemotingClient() as other:
        for _ in range(100):
            cmd = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
            if (await other.invoke(namesrv.addr, cmd)).code == ResponseCode.TOPIC_NOT_EXIST:
                break
            await asyncio.sleep(0.02)
        else:
            pytest.fail("route still present after the broker's connection closed")


async def test_a_kv_change_that_cannot_be_saved_is_undone_and_reported(tmp_path: Path) -> None:
    folder = tmp_path / "kv"
    config = NamesrvConfig(listen_host="127.0.0.1", listen_port=0, kv_config_path=str(folder / "kv.json"))
    async with NameServer(config) as ns, RemotingClient() as client:
        folder.write_text("")  # the KV file's folder is now a regular file, so every write fails
        host, port = ns.address
        namesrv = Namesrv(ns, client, f"{host}:{port}")
        put = await namesrv.call(RequestCode.PUT_KV_CONFIG, {"namespace": "ns", "key": "k", "value": "v"})
        assert put.code == ResponseCode.SYSTEM_ERROR and put.remark
        got = await namesrv.call(RequestCode.GET_KV_CONFIG, {"namespace": "ns", "key": "k"})
        assert got.code == ResponseCode.QUERY_NOT_FOUND


async def test_an_unreadable_kv_file_stops_the_start_with_a_config_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    config = NamesrvConfig(listen_host="127.0.0.1", listen_port=0, kv_config_path=str(blocker / "kv.json"))
    with pytest.raises(ConfigError, match="cannot read kvConfig file"):
        await NameServer(config).start()


async def test_requests_missing_required_headers_get_system_error_naming_the_field(namesrv: Namesrv) -> None:
    codes = [
        RequestCode.REGISTER_BROKER, RequestCode.UNREGISTER_BROKER, RequestCode.QUERY_DATA_VERSION,
        RequestCode.GET_ROUTEINFO_BY_TOPIC, RequestCode.GET_TOPICS_BY_CLUSTER, RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER, RequestCode.DELETE_TOPIC_IN_NAMESRV, RequestCode.PUT_KV_CONFIG,
        RequestCode.GET_KV_CONFIG, RequestCode.DELETE_KV_CONFIG, RequestCode.GET_KVLIST_BY_NAMESPACE,
    ]
    for code in codes:
        response = await namesrv.call(code, None, b"\x00\xff{]")
        assert response.code == ResponseCode.SYSTEM_ERROR, code
        assert re.fullmatch(r"the custom field <\w+> is null", response.remark or ""), response.remark


async def test_garbage_bodies_get_system_error_and_the_server_keeps_serving(namesrv: Namesrv) -> None:
    for garbage in (b"\x00\xff{]", b"[]", b'{"counter":"x","topicConfigSerializeWrapper":7}'):
        header = broker_header("broker-g", "127.0.0.7:10911")
        for code in (RequestCode.REGISTER_BROKER, RequestCode.QUERY_DATA_VERSION, RequestCode.UPDATE_NAMESRV_CONFIG):
            response = await namesrv.call(code, header, garbage)
            assert response.code == ResponseCode.SYSTEM_ERROR and response.remark, (code, garbage)
    assert (await namesrv.call(RequestCode.GET_BROKER_CLUSTER_INFO)).code == ResponseCode.SUCCESS


async def test_namesrv_config_update_is_written_back_to_its_config_file(tmp_path: Path) -> None:
    """RocketMQ's NamesrvController persists UPDATE_NAMESRV_CONFIG (Configuration.persist) to configStorePath;
    OrbitMQ uses configStorePath when given, else the -c file."""
    conf = tmp_path / "namesrv.properties"
    conf.write_text("orderMessageEnable=false\nserverWorkerThreads=16\n")
    from dataclasses import replace

    from orbitmq.common.javaprops import parse_properties

    config = NamesrvConfig.from_properties({
        **parse_properties(conf.read_text()), "listenHost": "127.0.0.1", "listenPort": "0",
        "kvConfigPath": str(tmp_path / "kv.json"),
    })
    config = replace(config, config_file=str(conf))
    async with NameServer(config) as ns, RemotingClient() as client:
        host, port = ns.address
        namesrv = Namesrv(ns, client, f"{host}:{port}")
        shown = (await namesrv.call(RequestCode.GET_NAMESRV_CONFIG)).body_bytes().decode()
        assert "serverWorkerThreads=16\n" in shown and "serverSelectorThreads=3\n" in shown
        ok = await namesrv.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\n")
        assert ok.code == ResponseCode.SUCCESS
        saved = parse_properties(conf.read_text())
        assert saved["orderMessageEnable"] == "true" and saved["serverWorkerThreads"] == "16"
        assert NamesrvConfig.from_properties(saved).order_message_enable is True
        typo = await namesrv.call(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnabled=false\n")
        assert typo.code == ResponseCode.SYSTEM_ERROR and "did you mean orderMessageEnable?" in (typo.remark or "")
        assert parse_properties(conf.read_text())["orderMessageEnable"] == "true"
