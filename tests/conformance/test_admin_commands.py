"""The requests of RocketMQ 4.9's mqadmin commands not replayed elsewhere in tests/conformance,
as MQClientAPIImpl builds them and as DefaultMQAdminExtImpl reads the answers: NameServer KV and
write permissions, NameServer and broker configuration, subscription groups, topic tables,
producer connections, QUERY_TOPIC_CONSUME_BY_WHO, INVOKE_BROKER_TO_RESET_OFFSET's
MessageQueue-keyed ResetOffsetBody, and the plain-ACL admin requests.

The last test checks that every request the admin registry lists for an mqadmin command is
replayed by some module of tests/conformance.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.admin.registry import ROCKETMQ_COMMANDS
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.signing import sign_request
from tests.acl.conftest import ADMIN, AclCluster, start_acl_dev
from tests.conformance.test_admin_maintenance import make_topic, send
from tests.conformance.test_admin_tools import fastjson_loads_object_keys
from tests.conformance.wire import Conn, fastjson_loads
from tests.support.dev import DevServer

PUT_KV_CONFIG = 100
GET_KV_CONFIG = 101
DELETE_KV_CONFIG = 102
WIPE_WRITE_PERM_OF_BROKER = 205
ADD_WRITE_PERM_OF_BROKER = 327
GET_NAMESRV_CONFIG = 319
UPDATE_NAMESRV_CONFIG = 318
GET_ROUTEINFO_BY_TOPIC = 105
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
DELETE_SUBSCRIPTIONGROUP = 207
GET_ALL_TOPIC_CONFIG = 21
GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
GET_BROKER_CONFIG = 26
UPDATE_BROKER_CONFIG = 25
GET_PRODUCER_CONNECTION_LIST = 204
QUERY_TOPIC_CONSUME_BY_WHO = 300
INVOKE_BROKER_TO_RESET_OFFSET = 222
HEART_BEAT = 34
UPDATE_CONSUMER_OFFSET = 15
UPDATE_AND_CREATE_ACL_CONFIG = 50
DELETE_ACL_CONFIG = 51
GET_BROKER_CLUSTER_ACL_INFO = 52
UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
QUERY_NOT_FOUND = 22
TOPIC = "ConfCmds"


def test_kv_config_put_get_delete_as_update_order_conf_sends_them(dev: DevServer) -> None:
    """updateKvConfig / updateOrderConf / deleteKvConfig: PutKVConfigRequestHeader, GetKVConfigResponseHeader."""
    with Conn(dev.namesrv) as ns:
        put = ns.java(PUT_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "ConfOrd", "value": "broker-a:4"})
        got = ns.java(GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "ConfOrd"})
        deleted = ns.java(DELETE_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "ConfOrd"})
        gone = ns.java(GET_KV_CONFIG, {"namespace": "ORDER_TOPIC_CONFIG", "key": "ConfOrd"})
    assert (put.code, deleted.code) == (0, 0)
    assert got.code == 0 and got.ext["value"] == "broker-a:4"
    assert gone.code == QUERY_NOT_FOUND and gone.remark


def test_wipe_and_add_write_perm_answer_their_topic_counts(dev: DevServer) -> None:
    """WipeWritePermOfBrokerResponseHeader.wipeTopicCount / AddWritePermOfBrokerResponseHeader.addTopicCount."""
    with Conn(dev.namesrv) as ns:
        wiped = ns.java(WIPE_WRITE_PERM_OF_BROKER, {"brokerName": dev.broker_name})
        route = fastjson_loads(ns.java(GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}).body)
        added = ns.java(ADD_WRITE_PERM_OF_BROKER, {"brokerName": dev.broker_name})
        back = fastjson_loads(ns.java(GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}).body)
    assert wiped.code == 0 and int(wiped.ext["wipeTopicCount"]) > 0
    assert all(q["perm"] & 2 == 0 for q in route["queueDatas"])
    assert added.code == 0 and int(added.ext["addTopicCount"]) == int(wiped.ext["wipeTopicCount"])
    assert all(q["perm"] & 2 for q in back["queueDatas"])


def test_name_server_config_reads_as_properties_and_takes_properties(dev: DevServer) -> None:
    """getNamesrvConfig: MixAll.string2Properties of the body; updateNamesrvConfig: properties2String."""
    with Conn(dev.namesrv) as ns:
        before = ns.java(GET_NAMESRV_CONFIG)
        updated = ns.java(UPDATE_NAMESRV_CONFIG, None, b"orderMessageEnable=true\n")
        after = ns.java(GET_NAMESRV_CONFIG)
    props = dict(line.split("=", 1) for line in before.body.decode().splitlines() if "=" in line)
    assert props["orderMessageEnable"] == "false"
    assert updated.code == 0
    assert "orderMessageEnable=true" in after.body.decode().splitlines()


def test_broker_config_reads_and_updates_as_properties(dev: DevServer) -> None:
    """getBrokerConfig / exportConfigs read the body with string2Properties; updateBrokerConfig sends properties."""
    with Conn(dev.broker) as broker:
        got = broker.java(GET_BROKER_CONFIG)
        updated = broker.java(UPDATE_BROKER_CONFIG, None, b"defaultTopicQueueNums=6\n")
        again = broker.java(GET_BROKER_CONFIG)
    props = dict(line.split("=", 1) for line in got.body.decode().splitlines() if "=" in line)
    for key in ("brokerClusterName", "brokerName", "brokerId", "brokerRole", "flushDiskType", "fileReservedTime"):
        assert key in props, key
    assert updated.code == 0
    assert "defaultTopicQueueNums=6" in again.body.decode().splitlines()


def test_subscription_group_create_list_delete(dev: DevServer) -> None:
    """updateSubGroup: SubscriptionGroupConfig body; getConsumerConfig / exportMetadata read the wrapper."""
    config = {"groupName": "CG_conf_cmds", "consumeEnable": True, "consumeFromMinEnable": False,
              "consumeBroadcastEnable": True, "retryQueueNums": 1, "retryMaxTimes": 5, "brokerId": 0,
              "whichBrokerWhenConsumeSlowly": 1, "notifyConsumerIdsChangedEnable": True}
    with Conn(dev.broker) as broker:
        created = broker.java(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps(config).encode())
        listed = fastjson_loads(broker.java(GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body)
        deleted = broker.java(DELETE_SUBSCRIPTIONGROUP, {"groupName": "CG_conf_cmds", "removeOffset": "true"})
        after = fastjson_loads(broker.java(GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body)
    assert created.code == 0 and deleted.code == 0
    mine = listed["subscriptionGroupTable"]["CG_conf_cmds"]
    assert (mine["retryMaxTimes"], mine["consumeFromMinEnable"]) == (5, False)
    assert {"counter", "timestamp"} <= set(listed["dataVersion"])
    assert "CG_conf_cmds" not in after["subscriptionGroupTable"]


def test_a_rocketmq5_subscription_group_body_keeps_consume_message_orderly(dev: DevServer) -> None:
    """RocketMQ 5's mqadmin updateSubGroup -o true sends its whole bean; consumeMessageOrderly is kept and listed,
    the 5.x fields OrbitMQ has no use for are accepted, and a 4.x body (without the field) lists it false."""
    v5 = {"attributes": {}, "brokerId": 0, "consumeBroadcastEnable": False, "consumeEnable": True,
          "consumeFromMinEnable": False, "consumeMessageOrderly": True, "consumeTimeoutMinute": 15,
          "groupName": "CG_conf_v5", "groupRetryPolicy": {"type": "CUSTOMIZED"}, "groupSysFlag": 0,
          "notifyConsumerIdsChangedEnable": True, "retryMaxTimes": 16, "retryQueueNums": 1,
          "whichBrokerWhenConsumeSlowly": 1}
    v4 = {"groupName": "CG_conf_v4", "consumeEnable": True, "retryQueueNums": 1, "retryMaxTimes": 16}
    with Conn(dev.broker) as broker:
        assert broker.java(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps(v5).encode()).code == 0
        assert broker.java(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps(v4).encode()).code == 0
        bad = broker.java(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                          json.dumps({"groupName": "CG_conf_bad", "consumeMessageOrderly": [1]}).encode())
        listed = fastjson_loads(broker.java(GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body)["subscriptionGroupTable"]
        for name in ("CG_conf_v5", "CG_conf_v4"):
            broker.java(DELETE_SUBSCRIPTIONGROUP, {"groupName": name, "removeOffset": "true"})
    assert listed["CG_conf_v5"]["consumeMessageOrderly"] is True
    assert listed["CG_conf_v4"]["consumeMessageOrderly"] is False
    assert bad.code == 1 and "CG_conf_bad" in (bad.remark or "") and "CG_conf_bad" not in listed


def test_a_rocketmq5_group_retry_policy_is_kept_and_a_bad_one_refused(dev: DevServer) -> None:
    """RocketMQ 5's groupRetryPolicy (mqadmin updateSubGroup -p) is kept in its JSON form; a 4.x body lists
    the default {"type":"CUSTOMIZED"}; a policy RocketMQ could not use is refused with SYSTEM_ERROR naming
    the group, and the group's earlier config stays."""
    exp = {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": 1000, "max": 60000, "multiplier": 3}}
    body = {"groupName": "CG_conf_policy", "retryMaxTimes": 4, "groupRetryPolicy": exp}
    with Conn(dev.broker) as broker:
        assert broker.java(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps(body).encode()).code == 0
        v4 = {"groupName": "CG_conf_policy4", "retryMaxTimes": 16}
        assert broker.java(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps(v4).encode()).code == 0
        refused = [broker.java(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None,
                               json.dumps({**body, "groupRetryPolicy": bad}).encode())
                   for bad in ({"type": "LINEAR"}, {"type": "CUSTOMIZED", "customizedRetryPolicy": {"next": []}},
                               {"type": "EXPONENTIAL", "exponentialRetryPolicy": {"initial": -5}})]
        listed = fastjson_loads(broker.java(GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body)["subscriptionGroupTable"]
        for name in ("CG_conf_policy", "CG_conf_policy4"):
            broker.java(DELETE_SUBSCRIPTIONGROUP, {"groupName": name, "removeOffset": "true"})
    assert listed["CG_conf_policy"]["groupRetryPolicy"] == exp and listed["CG_conf_policy"]["retryMaxTimes"] == 4
    assert listed["CG_conf_policy4"]["groupRetryPolicy"] == {"type": "CUSTOMIZED"}
    for bad in refused:
        assert bad.code == 1 and "CG_conf_policy" in (bad.remark or "") and "groupRetryPolicy" in (bad.remark or "")


def test_topic_tables_for_export_metadata(dev: DevServer) -> None:
    """getUserTopicConfig: TopicConfigSerializeWrapper minus GET_SYSTEM_TOPIC_LIST_FROM_BROKER's topics."""
    with Conn(dev.broker) as broker:
        make_topic(broker, TOPIC)
        table = fastjson_loads(broker.java(GET_ALL_TOPIC_CONFIG).body)
        system = fastjson_loads(broker.java(GET_SYSTEM_TOPIC_LIST_FROM_BROKER).body)
    mine = table["topicConfigTable"][TOPIC]
    assert (mine["topicName"], mine["readQueueNums"], mine["perm"]) == (TOPIC, 1, 6)
    assert {"counter", "timestamp"} <= set(table["dataVersion"])
    assert "SCHEDULE_TOPIC_XXXX" in system["topicList"] and TOPIC not in system["topicList"]


def test_producer_connection_and_consumers_by_topic(dev: DevServer) -> None:
    """producerConnection: ProducerConnection.connectionSet; topicList -c / statsAll: GroupList.groupList."""
    heartbeat = json.dumps({
        "clientID": "127.0.0.1@9191#1", "producerDataSet": [{"groupName": "PG_conf_cmds"}],
        "consumerDataSet": [],
    }).encode()
    with Conn(dev.broker) as client:
        make_topic(client, TOPIC)
        assert client.java(HEART_BEAT, None, heartbeat).code == 0
        client.java(UPDATE_CONSUMER_OFFSET, {"consumerGroup": "CG_who", "topic": TOPIC, "queueId": "0",
                                             "commitOffset": "0"})
        with Conn(dev.broker) as admin:
            producers = admin.java(GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "PG_conf_cmds"})
            who = admin.java(QUERY_TOPIC_CONSUME_BY_WHO, {"topic": TOPIC})
    assert producers.code == 0, producers.remark
    (conn,) = fastjson_loads(producers.body)["connectionSet"]
    assert conn["clientId"] == "127.0.0.1@9191#1" and conn["language"] == "JAVA" and int(conn["version"]) > 0
    assert "CG_who" in fastjson_loads(who.body)["groupList"]


def test_reset_offset_answers_a_message_queue_keyed_body(dev: DevServer) -> None:
    """resetOffsetByTime / skipAccumulatedMessage: ResetOffsetBody.offsetTable keyed by MessageQueue objects."""
    topic = TOPIC + "Reset"
    with Conn(dev.broker) as broker:
        make_topic(broker, topic)
        for _ in range(2):
            send(broker, topic, b"r")
        group = {"groupName": "CG_reset_conf", "consumeEnable": True, "retryQueueNums": 1, "retryMaxTimes": 16}
        assert broker.java(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, json.dumps(group).encode()).code == 0
        broker.java(UPDATE_CONSUMER_OFFSET, {"consumerGroup": "CG_reset_conf", "topic": topic, "queueId": "0",
                                             "commitOffset": "0"})
        reply = broker.java(INVOKE_BROKER_TO_RESET_OFFSET, {"topic": topic, "group": "CG_reset_conf",
                                                            "timestamp": "-1", "isForce": "true"})
    assert reply.code == 0, reply.remark
    assert reply.body.startswith(b'{"offsetTable":{{"brokerName":')
    table = fastjson_loads_object_keys(reply.body)["offsetTable"]
    assert table == [({"brokerName": dev.broker_name, "queueId": 0, "topic": topic}, 2)]


@pytest.fixture(scope="module")
def acl_dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AclCluster]:
    cluster = start_acl_dev(tmp_path_factory.mktemp("acl-conf"))
    try:
        yield cluster
    finally:
        cluster.stop()


def signed(code: int, fields: dict[str, str] | None = None, body: bytes = b"") -> dict[str, str]:
    request = RemotingCommand.request(code, dict(fields or {}), body or None)
    return dict(sign_request(request, ADMIN).ext_fields or {})


def test_acl_admin_requests_as_the_acl_commands_send_them(acl_dev: AclCluster) -> None:
    """updateAclConfig (CreateAccessConfigRequestHeader), deleteAclConfig, updateGlobalWhiteAddr,
    clusterAclConfigVersion (GetBrokerAclConfigResponseHeader: version is a DataVersion's JSON)."""
    account = {"accessKey": "confKey001", "secretKey": "confSecret01", "admin": "false",
               "defaultTopicPerm": "PUB", "defaultGroupPerm": "SUB", "topicPerms": "ConfT=PUB|SUB",
               "groupPerms": "", "whiteRemoteAddress": ""}
    with Conn(acl_dev.broker) as broker:
        before = broker.java(GET_BROKER_CLUSTER_ACL_INFO, signed(GET_BROKER_CLUSTER_ACL_INFO))
        created = broker.java(UPDATE_AND_CREATE_ACL_CONFIG, signed(UPDATE_AND_CREATE_ACL_CONFIG, account))
        white = broker.java(UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
                            signed(UPDATE_GLOBAL_WHITE_ADDRS_CONFIG, {"globalWhiteAddrs": "127.0.0.1,10.10.*"}))
        deleted = broker.java(DELETE_ACL_CONFIG, signed(DELETE_ACL_CONFIG, {"accessKey": "confKey001"}))
        after = broker.java(GET_BROKER_CLUSTER_ACL_INFO, signed(GET_BROKER_CLUSTER_ACL_INFO))
    assert (created.code, white.code, deleted.code) == (0, 0, 0), (created.remark, white.remark, deleted.remark)
    assert before.code == 0 and after.code == 0
    for info in (before, after):
        assert info.ext["brokerName"] == acl_dev.broker_name and info.ext["brokerAddr"] == acl_dev.broker
        assert info.ext["clusterName"] == "DefaultCluster"
    old, new = json.loads(before.ext["version"]), json.loads(after.ext["version"])
    assert new["counter"] > old["counter"]
    assert isinstance(json.loads(after.ext["allAclFileVersion"]), dict)


def _replayed_codes() -> set[str]:
    """UPPER_CASE integer constants the conformance modules send (their names are RocketMQ's)."""
    names: set[str] = set()
    for path in Path(__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, int)):
                name = node.targets[0].id
                if name in RequestCode.__members__ and RequestCode[name] == node.value.value:
                    names.add(name)
    return names


def test_every_request_of_every_mqadmin_command_is_replayed_here() -> None:
    needed = {r for c in ROCKETMQ_COMMANDS if c.orbitmq for r in c.requests}
    assert sorted(needed - _replayed_codes()) == []
