"""RocketMQ 4.9's mqadmin command set and what OrbitMQ answers each with.

`ROCKETMQ_COMMANDS` lists every command `MQAdminStartup.initSubCommand` registers in RocketMQ
4.9 (in its order), plus the command classes 4.9 ships without registering them, each with:
the OrbitMQ command of the same name (or None, with the reason), the request codes it sends
(by RocketMQ's RequestCode names; tests/conformance replays each as RocketMQ's tool builds it),
and whether it lists things (those take `--json`). `ORBITMQ_COMMANDS` are OrbitMQ's own.

The docs table docs/mqadmin-commands.md is generated from this registry and the click
commands (`orbitmq.admin.doctable`); a test fails when the committed file differs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MqadminCommand:
    #: The command's name in RocketMQ 4.9's mqadmin.
    rocketmq: str
    #: The Java class that implements it (tools/.../command/).
    java_class: str
    #: The `orbitmq admin` / `mqadmin` command of the same name; None when OrbitMQ has none.
    orbitmq: str | None
    #: RequestCode names the command sends.
    requests: tuple[str, ...] = ()
    #: It prints a listing (and so takes --json).
    listing: bool = False
    #: False for classes RocketMQ 4.9 ships but does not register in MQAdminStartup.
    registered: bool = True
    note: str = ""


def _c(name: str, java: str, requests: str = "", listing: bool = False, note: str = "",
       orbitmq: str | None = "", registered: bool = True) -> MqadminCommand:
    return MqadminCommand(
        name, java, name if orbitmq == "" else orbitmq, tuple(requests.split()), listing, registered, note,
    )


ROCKETMQ_COMMANDS: tuple[MqadminCommand, ...] = (
    _c("updateTopic", "UpdateTopicSubCommand", "GET_BROKER_CLUSTER_INFO UPDATE_AND_CREATE_TOPIC PUT_KV_CONFIG",
       note="-a takes RocketMQ 5's attribute form"),
    _c("deleteTopic", "DeleteTopicSubCommand", "GET_BROKER_CLUSTER_INFO DELETE_TOPIC_IN_BROKER DELETE_TOPIC_IN_NAMESRV"),
    _c("updateSubGroup", "UpdateSubGroupSubCommand", "GET_BROKER_CLUSTER_INFO UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
       note="-o, -p and --attributes are RocketMQ 5's: consumeMessageOrderly (FIFO for RocketMQ 5 clients), "
            "groupRetryPolicy (their retry delays), attribute changes"),
    _c("deleteSubGroup", "DeleteSubscriptionGroupCommand", "GET_BROKER_CLUSTER_INFO DELETE_SUBSCRIPTIONGROUP"),
    _c("updateBrokerConfig", "UpdateBrokerConfigSubCommand", "GET_BROKER_CLUSTER_INFO UPDATE_BROKER_CONFIG"),
    _c("updateTopicPerm", "UpdateTopicPermSubCommand", "GET_ROUTEINFO_BY_TOPIC UPDATE_AND_CREATE_TOPIC",
       note="-b wins over -c"),
    _c("topicRoute", "TopicRouteSubCommand", "GET_ROUTEINFO_BY_TOPIC", note="prints the route in fastjson's pretty form; --json standard JSON"),
    _c("topicStatus", "TopicStatusSubCommand", "GET_ROUTEINFO_BY_TOPIC GET_TOPIC_STATS_INFO", listing=True),
    _c("topicClusterList", "TopicClusterSubCommand", "GET_ROUTEINFO_BY_TOPIC GET_BROKER_CLUSTER_INFO", listing=True),
    _c("brokerStatus", "BrokerStatusSubCommand", "GET_BROKER_RUNTIME_INFO", listing=True),
    _c("queryMsgById", "QueryMsgByIdSubCommand", "VIEW_MESSAGE_BY_ID QUERY_MESSAGE"),
    _c("queryMsgByKey", "QueryMsgByKeySubCommand", "GET_ROUTEINFO_BY_TOPIC QUERY_MESSAGE", listing=True),
    _c("queryMsgByUniqueKey", "QueryMsgByUniqueKeySubCommand", "QUERY_MESSAGE CONSUME_MESSAGE_DIRECTLY",
       note="-g -d consume the message directly"),
    _c("queryMsgByOffset", "QueryMsgByOffsetSubCommand", "GET_ROUTEINFO_BY_TOPIC PULL_MESSAGE"),
    _c("queryMsgTraceById", "QueryMsgTraceByIdSubCommand", "QUERY_MESSAGE", listing=True),
    _c("printMsg", "PrintMessageSubCommand",
       "GET_MIN_OFFSET GET_MAX_OFFSET SEARCH_OFFSET_BY_TIMESTAMP PULL_MESSAGE", listing=True,
       note="progress bar on a terminal"),
    _c("printMsgByQueue", "PrintMessageByQueueCommand",
       "GET_MIN_OFFSET GET_MAX_OFFSET SEARCH_OFFSET_BY_TIMESTAMP PULL_MESSAGE", listing=True,
       note="progress bar on a terminal"),
    _c("sendMsgStatus", "SendMsgStatusCommand", "SEND_MESSAGE_V2"),
    _c("brokerConsumeStats", "BrokerConsumeStatsSubCommad", "GET_BROKER_CONSUME_STATS", listing=True),
    _c("producerConnection", "ProducerConnectionSubCommand", "GET_ROUTEINFO_BY_TOPIC GET_PRODUCER_CONNECTION_LIST",
       listing=True),
    _c("consumerConnection", "ConsumerConnectionSubCommand", "GET_CONSUMER_CONNECTION_LIST", listing=True),
    _c("consumerProgress", "ConsumerProgressSubCommand",
       "GET_ALL_TOPIC_LIST_FROM_NAMESERVER GET_CONSUME_STATS GET_CONSUMER_CONNECTION_LIST GET_CONSUMER_RUNNING_INFO",
       listing=True, note="-s shows each queue's client IP; without -g, a line per group"),
    _c("consumerStatus", "ConsumerStatusSubCommand", "GET_CONSUMER_CONNECTION_LIST GET_CONSUMER_RUNNING_INFO",
       listing=True, note="-s asks for the clients' thread stacks; without -i each client's "
       "formatString() goes to the file <now-ms>/<clientId>, as RocketMQ writes it"),
    _c("cloneGroupOffset", "CloneGroupOffsetCommand", "GET_CONSUME_STATS UPDATE_CONSUMER_OFFSET",
       note="progress bar on a terminal"),
    _c("producer", "ProducerSubCommand", "GET_ALL_PRODUCER_INFO", listing=True),
    _c("clusterList", "ClusterListSubCommand", "GET_BROKER_CLUSTER_INFO GET_BROKER_RUNTIME_INFO", listing=True,
       note="-m totals, -i repeats"),
    _c("topicList", "TopicListSubCommand",
       "GET_ALL_TOPIC_LIST_FROM_NAMESERVER GET_BROKER_CLUSTER_INFO QUERY_TOPIC_CONSUME_BY_WHO", listing=True,
       note="-c adds cluster and consumer groups"),
    _c("updateKvConfig", "UpdateKvConfigCommand", "PUT_KV_CONFIG"),
    _c("deleteKvConfig", "DeleteKvConfigCommand", "DELETE_KV_CONFIG"),
    _c("wipeWritePerm", "WipeWritePermSubCommand", "WIPE_WRITE_PERM_OF_BROKER"),
    _c("addWritePerm", "AddWritePermSubCommand", "ADD_WRITE_PERM_OF_BROKER"),
    _c("resetOffsetByTime", "ResetOffsetByTimeCommand", "INVOKE_BROKER_TO_RESET_OFFSET", listing=True,
       note="-c resets C++ clients"),
    _c("skipAccumulatedMessage", "SkipAccumulationSubCommand", "INVOKE_BROKER_TO_RESET_OFFSET", listing=True),
    _c("updateOrderConf", "UpdateOrderConfCommand", "PUT_KV_CONFIG GET_KV_CONFIG DELETE_KV_CONFIG"),
    _c("cleanExpiredCQ", "CleanExpiredCQSubCommand", "GET_BROKER_CLUSTER_INFO CLEAN_EXPIRED_CONSUMEQUEUE"),
    _c("deleteExpiredCommitLog", "DeleteExpiredCommitLogSubCommand",
       "GET_BROKER_CLUSTER_INFO DELETE_EXPIRED_COMMITLOG"),
    _c("cleanUnusedTopic", "CleanUnusedTopicCommand", "GET_BROKER_CLUSTER_INFO CLEAN_UNUSED_TOPIC"),
    _c("startMonitoring", "StartMonitoringSubCommand", "GET_ALL_TOPIC_LIST_FROM_NAMESERVER GET_CONSUME_STATS",
       note="prints MonitorService's undone-message reports each round; --rounds bounds it"),
    _c("statsAll", "StatsAllSubCommand",
       "GET_ALL_TOPIC_LIST_FROM_NAMESERVER QUERY_TOPIC_CONSUME_BY_WHO VIEW_BROKER_STATS_DATA GET_CONSUME_STATS",
       listing=True),
    _c("allocateMQ", "AllocateMQSubCommand", "GET_ROUTEINFO_BY_TOPIC",
       note="prints fastjson's compact form, clients in HashMap order"),
    _c("checkMsgSendRT", "CheckMsgSendRTCommand", "GET_ROUTEINFO_BY_TOPIC SEND_MESSAGE_V2"),
    _c("clusterRT", "CLusterSendMsgRTCommand", "GET_BROKER_CLUSTER_INFO SEND_MESSAGE_V2",
       note="--rounds bounds its loop"),
    _c("getNamesrvConfig", "GetNamesrvConfigCommand", "GET_NAMESRV_CONFIG", listing=True),
    _c("updateNamesrvConfig", "UpdateNamesrvConfigCommand", "UPDATE_NAMESRV_CONFIG"),
    _c("getBrokerConfig", "GetBrokerConfigCommand", "GET_BROKER_CONFIG", listing=True),
    _c("getConsumerConfig", "GetConsumerConfigSubCommand", "GET_BROKER_CLUSTER_INFO GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
       listing=True),
    _c("queryCq", "QueryConsumeQueueCommand", "GET_ROUTEINFO_BY_TOPIC QUERY_CONSUME_QUEUE", listing=True),
    _c("sendMessage", "SendMessageCommand", "GET_ROUTEINFO_BY_TOPIC SEND_MESSAGE_V2"),
    _c("consumeMessage", "ConsumeMessageCommand", "GET_ROUTEINFO_BY_TOPIC SEARCH_OFFSET_BY_TIMESTAMP PULL_MESSAGE",
       listing=True, note="-s/-e read a time range"),
    _c("updateAclConfig", "UpdateAccessConfigSubCommand", "UPDATE_AND_CREATE_ACL_CONFIG"),
    _c("deleteAclConfig", "DeleteAccessConfigSubCommand", "DELETE_ACL_CONFIG"),
    _c("clusterAclConfigVersion", "ClusterAclConfigVersionListSubCommand", "GET_BROKER_CLUSTER_ACL_INFO",
       listing=True),
    _c("updateGlobalWhiteAddr", "UpdateGlobalWhiteAddrSubCommand", "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG"),
    _c("exportMetadata", "ExportMetadataCommand",
       "GET_ALL_TOPIC_CONFIG GET_SYSTEM_TOPIC_LIST_FROM_BROKER GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
       note="progress bar on a terminal"),
    _c("exportConfigs", "ExportConfigsCommand", "GET_BROKER_CLUSTER_INFO GET_BROKER_CONFIG",
       note="progress bar on a terminal"),
    _c("exportMetrics", "ExportMetricsCommand", "GET_BROKER_RUNTIME_INFO GET_BROKER_CONFIG VIEW_BROKER_STATS_DATA",
       note="progress bar on a terminal"),
    # Shipped in 4.9's tools but not registered by MQAdminStartup (unreachable from its mqadmin).
    _c("resetOffsetByTimeOld", "ResetOffsetByTimeOldCommand",
       "GET_CONSUME_STATS SEARCH_OFFSET_BY_TIMESTAMP GET_MAX_OFFSET UPDATE_CONSUMER_OFFSET", listing=True,
       registered=False, note="resetOffsetByTime's fallback when no consumer is online"),
    _c("getConsumerStatus", "GetConsumerStatusCommand", "INVOKE_BROKER_TO_GET_CONSUMER_STATUS", orbitmq=None,
       registered=False, note="not registered in 4.9's mqadmin; consumerStatus and consumerProgress -s report "
       "the same from the clients"),
    _c("consumer", "ConsumerSubCommand", "GET_CONSUMER_RUNNING_INFO", orbitmq=None, registered=False,
       note="not registered in 4.9's mqadmin; consumerStatus is the registered form"),
    _c("DecodeMessageId", "DecodeMessageIdCommond", orbitmq=None, registered=False,
       note="not registered in 4.9's mqadmin; it needs no server"),
)

#: Commands OrbitMQ adds (no RocketMQ 4.9 counterpart), with what they are for.
ORBITMQ_COMMANDS: dict[str, str] = {
    "consumeMessageDirectly": "have one client of a group consume one message (CONSUME_MESSAGE_DIRECTLY)",
    "deleteAccessConfig": "RocketMQ's other name for deleteAclConfig",
    "getAclConfig": "the brokers' plain_acl accounts (GET_BROKER_CLUSTER_ACL_CONFIG)",
    "queryDlq": "browse a group's dead letters",
    "resendDlq": "resend dead letters to their topic",
    "exportDlq": "export dead letters as JSON lines",
    "listTimerMessages": "timed messages waiting to be delivered",
    "cancelTimerMessage": "cancel a timed message",
    "rescheduleTimerMessage": "move a timed message",
    "recallMessage": "recall a timed message by its recall handle (RocketMQ 5.3's RECALL_MESSAGE)",
    # Controller mode, RocketMQ 5's controller commands (docs/failover.md).
    "getSyncStateSet": "each broker group's master, epochs and in-sync replicas (controller mode)",
    "getBrokerEpoch": "a broker group's epochs (controller mode)",
    "electMaster": "elect a broker group's master (controller mode)",
}

#: RocketMQ 5 commands asked for that 4.9 has not: what OrbitMQ offers instead.
NOT_IN_4_9: dict[str, str] = {
    "haStatus": "a RocketMQ 5 command (HAStatusSubCommand); 4.9's mqadmin has none, so OrbitMQ's has none either",
}


def by_name() -> dict[str, MqadminCommand]:
    return {c.rocketmq: c for c in ROCKETMQ_COMMANDS}
