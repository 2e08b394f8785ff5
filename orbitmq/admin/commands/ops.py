"""Operations commands of RocketMQ 4.9's mqadmin, with its flags and its output lines:
topicClusterList, updateTopicPerm, updateOrderConf, allocateMQ, wipeWritePerm, addWritePerm,
updateKvConfig, deleteKvConfig, getNamesrvConfig, updateNamesrvConfig, cleanExpiredCQ,
cleanUnusedTopic, deleteExpiredCommitLog.
"""

from __future__ import annotations

import click

from orbitmq.admin.api import AdminClient
from orbitmq.admin.commands.topic import ORDER_TOPIC_CONFIG, validated_topic
from orbitmq.admin.jprint import emit_json, jline, json_option
from orbitmq.admin.models import TopicConfig
from orbitmq.admin.runner import OperationFailed, namesrv_option, run_admin, split_namesrv, timeout_option
from orbitmq.client.allocate import Averagely
from orbitmq.client.queue import MessageQueue
from orbitmq.common import jsonbody
from orbitmq.common.hashing import java_string_hash
from orbitmq.errors import ClientError, OrbitMQError
from orbitmq.remoting.codes import RequestCode


@click.command("topicClusterList")
@click.option("-t", "--topic", required=True, help="topic name")
@json_option
@namesrv_option
@timeout_option
def topic_cluster_list(topic: str, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Get cluster info for topic: the clusters whose brokers serve it, one a line."""
    topic = topic.strip()

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        info = await admin.cluster_info()
        names = {b.broker_name for b in route.broker_datas}
        clusters = sorted(c for c, brokers in info.cluster_addr_table.items() if names & set(brokers))
        if as_json:
            emit_json(clusters)
            return
        for cluster in clusters:
            jline("%s%n", cluster)

    run_admin(namesrv, timeout, action)


@click.command("updateTopicPerm")
@click.option("-b", "--brokerAddr", "broker_addr", help="create topic to which broker")
@click.option("-c", "--clusterName", "cluster", help="create topic to which cluster")
@click.option("-t", "--topic", required=True, help="topic name")
@click.option("-p", "--perm", type=click.Choice(["2", "4", "6"]), required=True,
              help="set topic's permission(2|4|6), intro[2:W; 4:R; 6:RW]")
@namesrv_option
@timeout_option
def update_topic_perm(
    broker_addr: str | None, cluster: str | None, topic: str, perm: str, namesrv: str | None, timeout: float,
) -> None:
    """Update topic perm (-b wins over -c, as in RocketMQ)."""
    topic = validated_topic(topic.strip())
    new_perm = int(perm)
    if not broker_addr and not cluster:
        raise click.UsageError("give -b brokerAddr or -c clusterName")

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        if not route.queue_datas:
            raise ClientError(f"topic {topic!r} has no queue data")
        first = route.queue_datas[0]
        config = TopicConfig(topic, first.read_queue_nums, first.write_queue_nums, new_perm,
                             topic_sys_flag=first.topic_sys_flag)
        if broker_addr:
            addr = broker_addr.strip()
            broker_name = next((b.broker_name for b in route.broker_datas if b.broker_addrs.get(0) == addr), None)
            if broker_name is None:
                jline("updateTopicPerm error broker not exit or broker is not master!.%n")
                return
            old_perm = next((q.perm for q in route.queue_datas if q.broker_name == broker_name), 0)
            if old_perm == new_perm:
                jline("new perm equals to the old one!%n")
                return
            await admin.create_topic(addr, config)
            jline("update topic perm from %s to %s in %s success.%n", old_perm, new_perm, addr)
            jline("%s.%n", config)
            return
        assert cluster is not None
        for addr in sorted((await admin.cluster_masters(cluster.strip())).values()):
            await admin.create_topic(addr, config)
            jline("update topic perm from %s to %s in %s success.%n", first.perm, new_perm, addr)

    run_admin(namesrv, timeout, action)


@click.command("updateOrderConf")
@click.option("-t", "--topic", required=True, help="topic name")
@click.option("-v", "--orderConf", "order_conf", help="set order conf [eg. brokerName1:num;brokerName2:num]")
@click.option("-m", "--method", type=click.Choice(["put", "get", "delete"]), required=True,
              help="option type [eg. put|get|delete")
@namesrv_option
@timeout_option
def update_order_conf(topic: str, order_conf: str | None, method: str, namesrv: str | None, timeout: float) -> None:
    """Create or update or delete order conf (the NameServer's ORDER_TOPIC_CONFIG namespace)."""
    topic = topic.strip()
    if method == "put" and not (order_conf or "").strip():
        raise click.UsageError("please set orderConf with option -v.")

    async def action(admin: AdminClient) -> None:
        if method == "get":
            conf = await admin.get_kv_config(ORDER_TOPIC_CONFIG, topic)
            jline("get orderConf success. topic=[%s], orderConf=[%s] ", topic, conf)
        elif method == "put":
            assert order_conf is not None
            await admin.put_kv_config(ORDER_TOPIC_CONFIG, topic, order_conf.strip())
            jline("update orderConf success. topic=[%s], orderConf=[%s]", topic, order_conf.strip())
        else:
            await admin.delete_kv_config(ORDER_TOPIC_CONFIG, topic)
            jline("delete orderConf success. topic=[%s]", topic)

    run_admin(namesrv, timeout, action)


def mq_hash_code(mq: MessageQueue) -> int:
    """`MessageQueue.hashCode()`."""
    h = 31 + java_string_hash(mq.broker_name)
    h = 31 * h + mq.queue_id
    return (31 * h + java_string_hash(mq.topic)) & 0xFFFFFFFF


def hash_set_order(queues: list[MessageQueue]) -> list[MessageQueue]:
    """The queues as the HashSet of `MQClientInstance.topicRouteData2TopicSubscribeInfo` iterates them."""
    return [queues[i] for i in jsonbody.java_hash_order(queues, mq_hash_code)]


@click.command("allocateMQ")
@click.option("-t", "--topic", required=True, help="topic name")
@click.option("-i", "--ipList", "ip_list", required=True, help="ipList")
@namesrv_option
@timeout_option
def allocate_mq(topic: str, ip_list: str, namesrv: str | None, timeout: float) -> None:
    """Allocate MQ: how AllocateMessageQueueAveragely shares the topic's queues among these clients (JSON)."""
    topic = topic.strip()
    ips = ip_list.strip().split(",")

    async def action(admin: AdminClient) -> None:
        route = await admin.topic_route(topic)
        queues = hash_set_order(route.read_queues(topic))
        result = jsonbody.JavaHashMap.of(
            (ip, [q.to_json() for q in Averagely().allocate("aa", ip, queues, ips)]) for ip in ips)
        # RebalanceResult as RemotingSerializable.toJson(rr, false) writes it: fastjson's compact
        # form, `result` a HashMap in its iteration order, MessageQueue fields alphabetical.
        jline("%s%n", jsonbody.dumps_legacy({"result": result}).decode())

    run_admin(namesrv, timeout, action)


def _perm_command(name: str, verb: str, doc: str) -> click.Command:
    @click.command(name, help=doc)
    @click.option("-b", "--brokerName", "broker_name", required=True, help="broker name")
    @namesrv_option
    @timeout_option
    def command(broker_name: str, namesrv: str | None, timeout: float) -> None:
        broker_name = broker_name.strip()

        async def action(admin: AdminClient) -> None:
            failed = False
            for addr in admin.namesrv_addrs:
                try:
                    if verb == "wipe":
                        count = await admin.wipe_write_perm(addr, broker_name)
                    else:
                        count = await admin.add_write_perm(addr, broker_name)
                except OrbitMQError as exc:
                    failed = True
                    jline("%s write perm of broker[%s] in name server[%s] Failed%n", verb, broker_name, addr)
                    click.echo(f"error: {exc}", err=True)
                    continue
                jline("%s write perm of broker[%s] in name server[%s] OK, %d%n", verb, broker_name, addr, count)
            if failed:
                raise OperationFailed(f"{verb} write perm failed on some name server")

        run_admin(namesrv, timeout, action)

    return command


wipe_write_perm = _perm_command(
    "wipeWritePerm", "wipe", "Wipe write perm of broker in all name server you defined in the -n param")
add_write_perm = _perm_command(
    "addWritePerm", "add", "Add write perm of broker in all name server you defined in the -n param")


@click.command("updateKvConfig")
@click.option("-s", "--namespace", required=True, help="set the namespace")
@click.option("-k", "--key", required=True, help="set the key name")
@click.option("-v", "--value", required=True, help="set the key value")
@namesrv_option
@timeout_option
def update_kv_config(namespace: str, key: str, value: str, namesrv: str | None, timeout: float) -> None:
    """Create or update KV config (on every NameServer)."""

    async def action(admin: AdminClient) -> None:
        await admin.put_kv_config(namespace.strip(), key.strip(), value.strip())
        jline("create or update kv config to namespace success.%n")

    run_admin(namesrv, timeout, action)


@click.command("deleteKvConfig")
@click.option("-s", "--namespace", required=True, help="set the namespace")
@click.option("-k", "--key", required=True, help="set the key name")
@namesrv_option
@timeout_option
def delete_kv_config(namespace: str, key: str, namesrv: str | None, timeout: float) -> None:
    """Delete KV config (on every NameServer)."""

    async def action(admin: AdminClient) -> None:
        await admin.delete_kv_config(namespace.strip(), key.strip())
        jline("delete kv config from namespace success.%n")

    run_admin(namesrv, timeout, action)


@click.command("getNamesrvConfig")
@json_option
@namesrv_option
@timeout_option
def get_namesrv_config(as_json: bool, namesrv: str | None, timeout: float) -> None:
    """Get configs of name server (each NameServer of -n)."""

    async def action(admin: AdminClient) -> None:
        configs = {addr: await admin.namesrv_config(addr) for addr in admin.namesrv_addrs}
        if as_json:
            emit_json(configs)
            return
        for addr, config in configs.items():
            jline("============%s============\n", addr)
            for key, value in config.items():
                jline("%-50s=  %s\n", key, value)

    run_admin(namesrv, timeout, action)


@click.command("updateNamesrvConfig")
@click.option("-k", "--key", required=True, help="config key")
@click.option("-v", "--value", required=True, help="config value")
@namesrv_option
@timeout_option
def update_namesrv_config(key: str, value: str, namesrv: str | None, timeout: float) -> None:
    """Update configs of name server (each NameServer of -n)."""
    key, value = key.strip(), value.strip()
    servers = split_namesrv(namesrv)

    async def action(admin: AdminClient) -> None:
        for addr in servers:
            await admin.update_namesrv_config(addr, {key: value})
        jline("update name server config success!%s\n%s : %s\n", "[" + ", ".join(servers) + "]", key, value)

    run_admin(namesrv, timeout, action)


def _maintenance_command(name: str, code: int, doc: str, cluster_help: str) -> click.Command:
    @click.command(name, help=doc)
    @click.option("-b", "--brokerAddr", "broker_addr", help="Broker address")
    @click.option("-c", "--cluster", "cluster", help=cluster_help)
    @namesrv_option
    @timeout_option
    def command(broker_addr: str | None, cluster: str | None, namesrv: str | None, timeout: float) -> None:
        async def action(admin: AdminClient) -> None:
            if broker_addr:  # -b wins over -c, as in RocketMQ
                addrs = [broker_addr.strip()]
            else:
                info = await admin.cluster_info()
                clusters = [cluster.strip()] if cluster else sorted(info.cluster_addr_table)
                addrs = sorted(
                    addr for c in clusters for addr in info.master_addrs(c).values()
                )
            result = bool(addrs)
            for addr in addrs:
                try:
                    result = await admin.maintenance(addr, code) and result
                except OrbitMQError as exc:
                    click.echo(f"error: {addr}: {exc}", err=True)
                    result = False
            jline("success" if result else "false")
            if not result:
                raise OperationFailed(f"{name} did not succeed on every broker")

        run_admin(namesrv, timeout, action)

    return command


clean_expired_cq = _maintenance_command(
    "cleanExpiredCQ", RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, "Clean expired ConsumeQueue on broker.", "clustername")
clean_unused_topic = _maintenance_command(
    "cleanUnusedTopic", RequestCode.CLEAN_UNUSED_TOPIC, "Clean unused topic on broker.", "cluster name")
delete_expired_commit_log = _maintenance_command(
    "deleteExpiredCommitLog", RequestCode.DELETE_EXPIRED_COMMITLOG, "Delete expired CommitLog files", "clustername")


COMMANDS = [
    topic_cluster_list, update_topic_perm, update_order_conf, allocate_mq, wipe_write_perm, add_write_perm,
    update_kv_config, delete_kv_config, get_namesrv_config, update_namesrv_config, clean_expired_cq,
    clean_unused_topic, delete_expired_commit_log,
]
