"""Every configuration key RocketMQ 4.9 reads, and what OrbitMQ does with each.

RocketMQ fills its config objects with `MixAll.properties2Object`: a key is
the name of a public setter (`setTransactionTimeOut` -> `transactionTimeOut`)
whose one parameter is a String, a boolean, or a number. The broker fills
BrokerConfig, MessageStoreConfig, NettyServerConfig and NettyClientConfig
from broker.conf; the NameServer fills NamesrvConfig and NettyServerConfig.
`CATALOGUE` lists those keys of 4.9.7 with their Java type and default.

A row whose `ignored` is empty is applied: the broker's or NameServer's config
classes read it (a test checks both directions). A row with a reason is
accepted, kept (GET_BROKER_CONFIG shows it, an update rewrites it) and logged
once at start as having no effect, with that reason. A key in no row and
unknown to OrbitMQ's own settings stays an error; `suggest` names the nearest
known key.

To add a key: add a field to the config class that reads it and, when the key
is RocketMQ's, clear the reason of its row. Then regenerate docs/config-keys.md
(`python -m orbitmq.tools.config_docs --write`).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass

#: Java classes a key comes from.
BROKER = "BrokerConfig"
STORE = "MessageStoreConfig"
NETTY_SERVER = "NettyServerConfig"
NETTY_CLIENT = "NettyClientConfig"
NAMESRV = "NamesrvConfig"
#: Keys OrbitMQ adds to RocketMQ's sets, listed here because RocketMQ users look for them.
ORBITMQ = "OrbitMQ"

#: Classes each process reads its file into.
BROKER_CLASSES = (BROKER, STORE, NETTY_SERVER, NETTY_CLIENT)
NAMESRV_CLASSES = (NAMESRV, NETTY_SERVER)

_CPUS = os.cpu_count() or 1

# Reasons shared by several keys.
_POOL = "OrbitMQ serves requests on one asyncio event loop; it has no such thread pool or queue"
_NETTY = "Netty tuning; OrbitMQ's asyncio transport has no counterpart"
_NETTY_CLIENT = "Netty client tuning; the broker's own connections (NameServers, master) need none"
_COMMERCIAL = "commercial accounting of RocketMQ's cloud edition; OrbitMQ keeps no such counts"
_DLEDGER = "DLedger CommitLog is not supported; replication is master/slave HA (brokerRole, haMasterAddress)"
_TRANSIENT = "no transient store pool: OrbitMQ appends into the mapped CommitLog files directly"
_BITMAP = "no consume-queue extension or bloom-filter bitmaps; filters are evaluated per message"
_LMQ = "light message queues and multi-dispatch are not supported"
_FILTER_SERVER = "filter servers (class filters) are not supported; use tags or SQL92"


@dataclass(frozen=True)
class KeySpec:
    """One key: where RocketMQ declares it, its Java type and default, and OrbitMQ's use of it."""

    source: str
    key: str
    #: Java type of the setter's parameter: String, int, long, boolean, double, float.
    java_type: str
    #: RocketMQ's default as its properties text shows it (host-dependent ones on this host).
    default: str
    #: Why the key has no effect in OrbitMQ; empty when OrbitMQ applies it.
    ignored: str = ""
    #: The default as the documentation shows it when it depends on the host.
    default_doc: str = ""

    @property
    def applied(self) -> bool:
        return not self.ignored


def _k(source: str, key: str, java_type: str, default: str, ignored: str = "", doc: str = "") -> KeySpec:
    return KeySpec(source, key, java_type, default, ignored, doc)


CATALOGUE: tuple[KeySpec, ...] = (
    # --- BrokerConfig ---
    _k(BROKER, "traceOn", "boolean", "true"),
    _k(BROKER, "startAcceptSendRequestTimeStamp", "long", "0",
       "sends are accepted as soon as the broker listens"),
    _k(BROKER, "waitTimeMillsInSendQueue", "long", "200"),
    _k(BROKER, "consumerFallbehindThreshold", "long", "17179869184",
       "OrbitMQ never stops a slow consumer group (disableConsumeIfConsumerReadSlowly has no counterpart)"),
    _k(BROKER, "brokerFastFailureEnable", "boolean", "true"),
    _k(BROKER, "waitTimeMillsInPullQueue", "long", "5000",
       "pulls are not queued: they run, or are suspended up to maxSuspendedPulls"),
    _k(BROKER, "disableConsumeIfConsumerReadSlowly", "boolean", "false",
       "OrbitMQ never stops a slow consumer group"),
    _k(BROKER, "slaveReadEnable", "boolean", "false"),
    _k(BROKER, "registerBrokerTimeoutMills", "int", "6000"),
    _k(BROKER, "regionId", "String", "DefaultRegion"),
    _k(BROKER, "transferMsgByHeap", "boolean", "true",
       "pulled messages are always copied into the response; there is no zero-copy path to choose"),
    _k(BROKER, "messageStorePlugIn", "String", "", "message store plug-ins (Java classes) cannot be loaded"),
    _k(BROKER, "highSpeedMode", "boolean", "false", "unused by RocketMQ 4.9 itself"),
    _k(BROKER, "rocketmqHome", "String", "", doc="ROCKETMQ_HOME"),
    _k(BROKER, "brokerName", "String", "broker-a", doc="host name"),
    _k(BROKER, "brokerPermission", "int", "6"),
    _k(BROKER, "defaultTopicQueueNums", "int", "8"),
    _k(BROKER, "autoCreateTopicEnable", "boolean", "true"),
    _k(BROKER, "brokerClusterName", "String", "DefaultCluster"),
    _k(BROKER, "brokerIP1", "String", "", doc="host address"),
    _k(BROKER, "brokerIP2", "String", "", doc="host address"),
    _k(BROKER, "sendMessageThreadPoolNums", "int", str(min(_CPUS, 4)), _POOL, "min(CPUs, 4)"),
    _k(BROKER, "putMessageFutureThreadPoolNums", "int", str(min(_CPUS, 4)), _POOL, "min(CPUs, 4)"),
    _k(BROKER, "pullMessageThreadPoolNums", "int", str(16 + _CPUS * 2), _POOL, "16 + CPUs * 2"),
    _k(BROKER, "processReplyMessageThreadPoolNums", "int", str(16 + _CPUS * 2), _POOL, "16 + CPUs * 2"),
    _k(BROKER, "queryMessageThreadPoolNums", "int", str(8 + _CPUS), _POOL, "8 + CPUs"),
    _k(BROKER, "adminBrokerThreadPoolNums", "int", "16", _POOL),
    _k(BROKER, "flushConsumerOffsetInterval", "int", "5000"),
    _k(BROKER, "flushConsumerOffsetHistoryInterval", "int", "60000", "unused by RocketMQ 4.9 itself"),
    _k(BROKER, "clusterTopicEnable", "boolean", "true"),
    _k(BROKER, "namesrvAddr", "String", "", doc="NAMESRV_ADDR"),
    _k(BROKER, "brokerId", "long", "0"),
    _k(BROKER, "autoCreateSubscriptionGroup", "boolean", "true"),
    _k(BROKER, "rejectTransactionMessage", "boolean", "false"),
    _k(BROKER, "fetchNamesrvAddrByAddressServer", "boolean", "false",
       "no address server (jmenv) lookup; list the NameServers in namesrvAddr"),
    _k(BROKER, "sendThreadPoolQueueCapacity", "int", "10000", _POOL),
    _k(BROKER, "putThreadPoolQueueCapacity", "int", "10000", _POOL),
    _k(BROKER, "pullThreadPoolQueueCapacity", "int", "100000", _POOL),
    _k(BROKER, "replyThreadPoolQueueCapacity", "int", "10000", _POOL),
    _k(BROKER, "queryThreadPoolQueueCapacity", "int", "20000", _POOL),
    _k(BROKER, "brokerTopicEnable", "boolean", "true"),
    _k(BROKER, "filterServerNums", "int", "0", _FILTER_SERVER),
    _k(BROKER, "longPollingEnable", "boolean", "true"),
    _k(BROKER, "notifyConsumerIdsChangedEnable", "boolean", "true"),
    _k(BROKER, "shortPollingTimeMills", "long", "1000"),
    _k(BROKER, "clientManageThreadPoolNums", "int", "32", _POOL),
    _k(BROKER, "commercialEnable", "boolean", "true", _COMMERCIAL),
    _k(BROKER, "commercialTimerCount", "int", "1", _COMMERCIAL),
    _k(BROKER, "commercialTransCount", "int", "1", _COMMERCIAL),
    _k(BROKER, "commercialBigCount", "int", "1", _COMMERCIAL),
    _k(BROKER, "maxDelayTime", "int", "40", "unused by RocketMQ 4.9 itself"),
    _k(BROKER, "clientManagerThreadPoolQueueCapacity", "int", "1000000", _POOL),
    _k(BROKER, "consumerManagerThreadPoolQueueCapacity", "int", "1000000", _POOL),
    _k(BROKER, "consumerManageThreadPoolNums", "int", "32", _POOL),
    _k(BROKER, "commercialBaseCount", "int", "1", _COMMERCIAL),
    _k(BROKER, "enableCalcFilterBitMap", "boolean", "false", _BITMAP),
    _k(BROKER, "expectConsumerNumUseFilter", "int", "32", _BITMAP),
    _k(BROKER, "maxErrorRateOfBloomFilter", "int", "20", _BITMAP),
    _k(BROKER, "filterDataCleanTimeSpan", "long", "86400000", _BITMAP),
    _k(BROKER, "filterSupportRetry", "boolean", "false",
       "retry topics are always read without the subscription's filter, as RocketMQ's default does"),
    _k(BROKER, "enablePropertyFilter", "boolean", "false"),
    _k(BROKER, "compressedRegister", "boolean", "false",
       "REGISTER_BROKER bodies are sent uncompressed; NameServers read both forms"),
    _k(BROKER, "forceRegister", "boolean", "true",
       "the broker registers its whole topic table every period"),
    _k(BROKER, "heartbeatThreadPoolQueueCapacity", "int", "50000", _POOL),
    _k(BROKER, "heartbeatThreadPoolNums", "int", str(min(32, _CPUS)), _POOL, "min(32, CPUs)"),
    _k(BROKER, "waitTimeMillsInHeartbeatQueue", "long", "31000", _POOL),
    _k(BROKER, "registerNameServerPeriod", "int", "30000"),
    _k(BROKER, "transactionTimeOut", "long", "6000"),
    _k(BROKER, "transactionCheckMax", "int", "15"),
    _k(BROKER, "transactionCheckInterval", "long", "60000"),
    _k(BROKER, "endTransactionThreadPoolNums", "int", str(max(8 + _CPUS * 2, min(_CPUS, 4) * 4)), _POOL,
       "max(8 + CPUs * 2, sendMessageThreadPoolNums * 4)"),
    _k(BROKER, "endTransactionPoolQueueCapacity", "int", "100000", _POOL),
    _k(BROKER, "waitTimeMillsInTransactionQueue", "long", "3000", _POOL),
    _k(BROKER, "msgTraceTopicName", "String", "RMQ_SYS_TRACE_TOPIC"),
    _k(BROKER, "traceTopicEnable", "boolean", "false"),
    _k(BROKER, "aclEnable", "boolean", "false"),
    _k(BROKER, "storeReplyMessageEnable", "boolean", "true"),
    _k(BROKER, "enableDetailStat", "boolean", "true",
       "per-topic and per-group figures are always kept (GET_BROKER_RUNTIME_INFO, VIEW_BROKER_STATS_DATA)"),
    _k(BROKER, "autoDeleteUnusedStats", "boolean", "false", "statistics of deleted topics and groups go with them"),
    _k(BROKER, "isolateLogEnable", "boolean", "false", "OrbitMQ logs to stderr; there are no log files to isolate"),
    # --- MessageStoreConfig ---
    _k(STORE, "debugLockEnable", "boolean", "false", "appends take no lock to debug"),
    _k(STORE, "duplicationEnable", "boolean", "false",
       "a restarted store recovers its exact CommitLog offsets; there is no duplicated dispatch to allow"),
    _k(STORE, "osPageCacheBusyTimeOutMills", "long", "1000"),
    _k(STORE, "diskFallRecorded", "boolean", "true", "no per-request disk fall-behind figures"),
    _k(STORE, "warmMapedFileEnable", "boolean", "false"),
    _k(STORE, "mappedFileSizeCommitLog", "int", "1073741824"),
    _k(STORE, "mappedFileSizeConsumeQueue", "int", "6000000"),
    _k(STORE, "enableConsumeQueueExt", "boolean", "false", _BITMAP),
    _k(STORE, "mappedFileSizeConsumeQueueExt", "int", "50331648", _BITMAP),
    _k(STORE, "bitMapLengthConsumeQueueExt", "int", "64", _BITMAP),
    _k(STORE, "flushIntervalCommitLog", "int", "500"),
    _k(STORE, "flushIntervalConsumeQueue", "int", "1000"),
    _k(STORE, "putMsgIndexHightWater", "int", "600000", "unused by RocketMQ 4.9 itself"),
    _k(STORE, "cleanResourceInterval", "int", "10000"),
    _k(STORE, "maxMessageSize", "int", "4194304"),
    _k(STORE, "checkCRCOnRecover", "boolean", "true"),
    _k(STORE, "storePathCommitLog", "String", "", doc="<storePathRootDir>/commitlog"),
    _k(STORE, "storePathDLedgerCommitLog", "String", "", _DLEDGER),
    _k(STORE, "deleteWhen", "String", "04"),
    _k(STORE, "diskMaxUsedSpaceRatio", "int", "75"),
    _k(STORE, "deleteCommitLogFilesInterval", "int", "100"),
    _k(STORE, "deleteConsumeQueueFilesInterval", "int", "100"),
    _k(STORE, "maxTransferBytesOnMessageInMemory", "int", "262144"),
    _k(STORE, "maxTransferCountOnMessageInMemory", "int", "32"),
    _k(STORE, "maxTransferBytesOnMessageInDisk", "int", "65536"),
    _k(STORE, "maxTransferCountOnMessageInDisk", "int", "8"),
    _k(STORE, "flushCommitLogLeastPages", "int", "4"),
    _k(STORE, "flushConsumeQueueLeastPages", "int", "2"),
    _k(STORE, "flushCommitLogThoroughInterval", "int", "10000"),
    _k(STORE, "flushConsumeQueueThoroughInterval", "int", "60000"),
    _k(STORE, "destroyMapedFileIntervalForcibly", "int", "120000"),
    _k(STORE, "fileReservedTime", "int", "72"),
    _k(STORE, "redeleteHangedFileInterval", "int", "120000",
       "a file a reader still holds is deleted after destroyMapedFileIntervalForcibly; no second pass"),
    _k(STORE, "accessMessageInMemoryMaxRatio", "int", "40"),
    _k(STORE, "messageIndexEnable", "boolean", "true"),
    _k(STORE, "maxHashSlotNum", "int", "5000000"),
    _k(STORE, "maxIndexNum", "int", "20000000"),
    _k(STORE, "maxMsgsNumBatch", "int", "64"),
    _k(STORE, "haListenPort", "int", "10912", doc="listenPort + 1"),
    _k(STORE, "haSendHeartbeatInterval", "int", "5000"),
    _k(STORE, "haHousekeepingInterval", "int", "20000"),
    _k(STORE, "brokerRole", "String", "ASYNC_MASTER"),
    _k(STORE, "haTransferBatchSize", "int", "32768"),
    _k(STORE, "haSlaveFallbehindMax", "int", "268435456"),
    _k(STORE, "flushDiskType", "String", "ASYNC_FLUSH"),
    _k(STORE, "syncFlushTimeout", "int", "5000"),
    _k(STORE, "slaveTimeout", "int", "3000"),
    _k(STORE, "haMasterAddress", "String", ""),
    _k(STORE, "messageDelayLevel", "String", "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"),
    _k(STORE, "flushDelayOffsetInterval", "long", "10000"),
    _k(STORE, "cleanFileForciblyEnable", "boolean", "true"),
    _k(STORE, "messageIndexSafe", "boolean", "false"),
    _k(STORE, "flushCommitLogTimed", "boolean", "true",
       "the CommitLog flush always waits on a timer of flushIntervalCommitLog"),
    _k(STORE, "storePathRootDir", "String", "~/store", doc="${user.home}/store"),
    _k(STORE, "flushLeastPagesWhenWarmMapedFile", "int", "4096",
       "warming writes a new file in the allocation thread, flushed once"),
    _k(STORE, "offsetCheckInSlave", "boolean", "false",
       "a slave answers a pull's offset check as its master does"),
    _k(STORE, "defaultQueryMaxNum", "int", "32"),
    _k(STORE, "transientStorePoolEnable", "boolean", "false", _TRANSIENT),
    _k(STORE, "transientStorePoolSize", "int", "5", _TRANSIENT),
    _k(STORE, "commitIntervalCommitLog", "int", "200", _TRANSIENT),
    _k(STORE, "fastFailIfNoBufferInStorePool", "boolean", "false", _TRANSIENT),
    _k(STORE, "useReentrantLockWhenPutMessage", "boolean", "true",
       "appends run on the event loop and take no put-message lock"),
    _k(STORE, "commitCommitLogLeastPages", "int", "4", _TRANSIENT),
    _k(STORE, "commitCommitLogThoroughInterval", "int", "200", _TRANSIENT),
    _k(STORE, "readOnlyCommitLogStorePaths", "String", "",
       "the CommitLog lives in one folder (storePathCommitLog)"),
    _k(STORE, "dLegerGroup", "String", "", _DLEDGER),
    _k(STORE, "dLegerPeers", "String", "", _DLEDGER),
    _k(STORE, "dLegerSelfId", "String", "", _DLEDGER),
    _k(STORE, "enableDLegerCommitLog", "boolean", "false", _DLEDGER),
    _k(STORE, "preferredLeaderId", "String", "", _DLEDGER),
    _k(STORE, "enableBatchPush", "boolean", "false", _DLEDGER),
    _k(STORE, "enableScheduleMessageStats", "boolean", "true",
       "delayed messages are counted with all others"),
    _k(STORE, "enableLmq", "boolean", "false", _LMQ),
    _k(STORE, "enableMultiDispatch", "boolean", "false", _LMQ),
    _k(STORE, "maxLmqConsumeQueueNum", "int", "20000", _LMQ),
    _k(STORE, "enableScheduleAsyncDeliver", "boolean", "false",
       "delayed messages are delivered by one task per level on the event loop"),
    _k(STORE, "scheduleAsyncDeliverMaxPendingLimit", "int", "2000",
       "delayed messages are delivered by one task per level on the event loop"),
    _k(STORE, "scheduleAsyncDeliverMaxResendNum2Blocked", "int", "3",
       "delayed messages are delivered by one task per level on the event loop"),
    # --- NettyServerConfig (broker and NameServer) ---
    _k(NETTY_SERVER, "listenPort", "int", "8888", doc="10911 (broker), 9876 (NameServer)"),
    _k(NETTY_SERVER, "serverWorkerThreads", "int", "8", _NETTY),
    _k(NETTY_SERVER, "serverSelectorThreads", "int", "3", _NETTY),
    _k(NETTY_SERVER, "serverOnewaySemaphoreValue", "int", "256", _NETTY),
    _k(NETTY_SERVER, "serverCallbackExecutorThreads", "int", "0", _NETTY),
    _k(NETTY_SERVER, "serverAsyncSemaphoreValue", "int", "64", _NETTY),
    _k(NETTY_SERVER, "serverChannelMaxIdleTimeSeconds", "int", "120",
       "idle clients are dropped by the heartbeat check (channelExpiredTimeoutMills)"),
    _k(NETTY_SERVER, "serverSocketSndBufSize", "int", "0", _NETTY),
    _k(NETTY_SERVER, "serverSocketRcvBufSize", "int", "0", _NETTY),
    _k(NETTY_SERVER, "serverSocketBacklog", "int", "1024"),
    _k(NETTY_SERVER, "serverPooledByteBufAllocatorEnable", "boolean", "true", _NETTY),
    _k(NETTY_SERVER, "useEpollNativeSelector", "boolean", "false",
       "the event loop picks epoll itself (uvloop when installed)"),
    _k(NETTY_SERVER, "writeBufferLowWaterMark", "int", "0",
       "output held for slow readers is bounded by remotingMemoryBudget"),
    _k(NETTY_SERVER, "writeBufferHighWaterMark", "int", "0",
       "output held for slow readers is bounded by remotingMemoryBudget"),
    # --- NettyClientConfig (broker) ---
    _k(NETTY_CLIENT, "clientCloseSocketIfTimeout", "boolean", "true", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "clientWorkerThreads", "int", "4", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "clientOnewaySemaphoreValue", "int", "65535", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "connectTimeoutMillis", "int", "3000", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "clientCallbackExecutorThreads", "int", str(_CPUS), _NETTY_CLIENT, "CPUs"),
    _k(NETTY_CLIENT, "channelNotActiveInterval", "long", "60000", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "clientAsyncSemaphoreValue", "int", "65535", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "clientChannelMaxIdleTimeSeconds", "int", "120", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "clientSocketSndBufSize", "int", "0", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "clientSocketRcvBufSize", "int", "0", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "clientPooledByteBufAllocatorEnable", "boolean", "false", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "useTLS", "boolean", "false",
       "the broker's own connections use TLS when tls.enable=true (docs/tls.md)"),
    _k(NETTY_CLIENT, "writeBufferLowWaterMark", "int", "0", _NETTY_CLIENT),
    _k(NETTY_CLIENT, "writeBufferHighWaterMark", "int", "0", _NETTY_CLIENT),
    # --- NamesrvConfig ---
    _k(NAMESRV, "orderMessageEnable", "boolean", "false"),
    _k(NAMESRV, "rocketmqHome", "String", "", "OrbitMQ reads nothing from ROCKETMQ_HOME"),
    _k(NAMESRV, "kvConfigPath", "String", "~/namesrv/kvConfig.json", doc="${user.home}/namesrv/kvConfig.json"),
    _k(NAMESRV, "productEnvName", "String", "center",
       "the cluster-test request processor (clusterTest) is not served; routes come from this NameServer"),
    _k(NAMESRV, "clusterTest", "boolean", "false",
       "the cluster-test request processor (routes from a product environment's NameServers) is not served"),
    _k(NAMESRV, "configStorePath", "String", "", doc="${user.home}/namesrv/namesrv.properties"),
    # --- OrbitMQ's additions RocketMQ users expect ---
    _k(ORBITMQ, "storePathConsumeQueue", "String", "", doc="<storePathRootDir>/consumequeue"),
    _k(ORBITMQ, "storePathIndex", "String", "", doc="<storePathRootDir>/index"),
)


def specs_for(classes: Iterable[str]) -> dict[str, KeySpec]:
    """The keys a process reading `classes` takes, by key (the first class declaring a key wins)."""
    wanted = tuple(classes)
    out: dict[str, KeySpec] = {}
    for spec in CATALOGUE:
        if spec.source in wanted and spec.key not in out:
            out[spec.key] = spec
    return out


#: Keys the broker takes, and those the NameServer takes (OrbitMQ's additions are the broker's).
BROKER_KEYS = specs_for((*BROKER_CLASSES, ORBITMQ))
NAMESRV_KEYS = specs_for(NAMESRV_CLASSES)


def parse_java_boolean(text: str) -> bool:
    """A boolean as RocketMQ reads it (`Boolean.parseBoolean`), refusing what Java would quietly
    read as false: only true/false, in any case, are accepted (ValueError otherwise)."""
    lowered = text.strip().lower()
    if lowered not in ("true", "false"):
        raise ValueError("expected true or false")
    return lowered == "true"


def suggest(key: str, known: Iterable[str]) -> str:
    """` (did you mean X?)` naming the known key nearest to `key`, or an empty string."""
    names = list(known)
    lowered = {name.lower(): name for name in names}
    if key.lower() in lowered:
        return f" (did you mean {lowered[key.lower()]}?)"
    match = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
    if not match:
        hit = difflib.get_close_matches(key.lower(), list(lowered), n=1, cutoff=0.6)
        match = [lowered[hit[0]]] if hit else []
    return f" (did you mean {match[0]}?)" if match else ""


__all__ = [
    "BROKER",
    "BROKER_CLASSES",
    "BROKER_KEYS",
    "CATALOGUE",
    "NAMESRV",
    "NAMESRV_CLASSES",
    "NAMESRV_KEYS",
    "NETTY_CLIENT",
    "NETTY_SERVER",
    "ORBITMQ",
    "STORE",
    "KeySpec",
    "parse_java_boolean",
    "specs_for",
    "suggest",
]
