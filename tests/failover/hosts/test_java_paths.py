"""The fault scenarios again, with requests built as RocketMQ 4.9's Java client builds them
(tests/support/javawire.py) instead of OrbitMQ's client."""

from __future__ import annotations

import time

import pytest

from tests.support.history import History, Outcome
from tests.support.javawire import JavaProducer, JavaPuller
from tests.support.netns import Network
from tests.support.nscluster import Cluster

pytestmark = pytest.mark.timeout(120)

UPDATE_AND_CREATE_TOPIC = 17


def _create_topic(cluster: Cluster, producer: JavaProducer, topic: str, hosts: list[str]) -> None:
    """UPDATE_AND_CREATE_TOPIC on each master, as mqadmin updateTopic sends it; then the route has them all."""
    for host in hosts:
        reply = producer.conns.call(cluster.addr(host), UPDATE_AND_CREATE_TOPIC, {
            "topic": topic, "defaultTopic": "TBW102", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6",
            "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false"})
        assert reply.code == 0, reply.remark
    queues, masters = producer.route(topic, refresh=True)
    assert len(masters) == len(hosts) and len(queues) == 4 * len(hosts)


def test_java_producers_route_around_a_cut_off_group_and_nothing_acknowledged_is_lost(
    net: Network, cluster: Cluster
) -> None:
    cluster.start_broker("a", "broker-a")
    cluster.start_broker("b", "broker-b")
    history = History()
    with net.enter("client"):
        producer = JavaProducer(cluster.namesrv, history, timeout=2.0)
        puller = JavaPuller(cluster.namesrv, history)
        try:
            _create_topic(cluster, producer, "JavaTwoGroups", ["a", "b"])
            for i in range(40):
                producer.send("JavaTwoGroups", f"before-{i}", stream="s", seq=i)
            net.isolate("a")
            outcomes = [producer.send("JavaTwoGroups", f"during-{i}", stream="s", seq=40 + i) for i in range(60)]
            # At most the first send (to broker-a) is lost to the cut; then the producer avoids broker-a.
            assert outcomes[1:] == [Outcome.ACKED] * 59
            during = [history.sends[f"during-{i}"] for i in range(1, 60)]
            assert {s.broker for s in during} == {"broker-b"}
            puller.drain("JavaTwoGroups", {s.key for s in during}, timeout=20)
            assert {s.key for s in during} <= history.delivered_keys(), "broker-b's traffic was held up"
            net.heal("a")
            puller.drain("JavaTwoGroups", history.acked_keys(), timeout=40)
        finally:
            producer.close()
            puller.close()
    history.check(max_duplicates=0, orderly=True)


def test_java_sends_to_a_sync_master_survive_its_sigkill_and_are_pulled_from_the_slave(
    net: Network, cluster: Cluster
) -> None:
    cluster.start_broker("m", "broker-a", "SYNC_MASTER")
    cluster.start_broker("s", "broker-a", "SLAVE", 1)
    history = History()
    with net.enter("client"):
        producer = JavaProducer(cluster.namesrv, history, timeout=5.0)
        puller = JavaPuller(cluster.namesrv, history)
        try:
            _create_topic(cluster, producer, "JavaSync", ["m"])
            for i in range(30):
                producer.send("JavaSync", f"before-{i}")
            net.cut("m", "s")
            # The only replica is unreachable: a send is stored on the master but never acknowledged.
            assert [producer.send("JavaSync", f"cut-{i}") for i in range(2)] == [Outcome.UNKNOWN] * 2
            net.mend("m", "s")
            for i in range(30):
                producer.send("JavaSync", f"after-{i}")
            assert sum(1 for k in history.acked_keys() if k.startswith("after-")) >= 25
            puller.pull_round("JavaSync")  # the consumer knows the route before the master dies
            cluster.kill("m")
            puller.drain("JavaSync", history.acked_keys(), timeout=40)
        finally:
            producer.close()
            puller.close()
    report = history.check(max_duplicates=0)
    assert report.acked >= 55


def test_java_clients_follow_a_failover_and_nothing_acknowledged_is_lost(net: Network, group: Cluster) -> None:
    """Controller mode: the master SIGKILLed under Java-client sends; the producer reaches the new
    master through its route poll (1 s here, 30 s in Java), the puller continues from its offsets."""
    import asyncio

    from tests.failover.hosts.conftest import GROUP, REPLICAS
    from tests.support.nscluster import group_state, topic_on_replicas, wait_master

    history = History()
    with net.enter("client"):
        master = asyncio.run(wait_master(group, GROUP))
        producer = JavaProducer(group.namesrv, history, timeout=3.0, poll_s=1.0)
        puller = JavaPuller(group.namesrv, history)
        try:
            _create_topic(group, producer, "JavaFailover", [master])
            for i in range(30):
                producer.send("JavaFailover", f"before-{i}", stream="s", seq=i)
            deadline = time.monotonic() + 30
            while not (asyncio.run(topic_on_replicas(group, list(REPLICAS), "JavaFailover"))
                       and len(group_state(group, GROUP).get("sss", [])) == len(REPLICAS)):
                assert time.monotonic() < deadline, "replicas not in sync before the kill"
                time.sleep(0.2)
            puller.pull_round("JavaFailover")
            group.kill(master)
            killed = time.monotonic()
            seq = 30
            while sum(1 for s in history.sends.values() if s.outcome is Outcome.ACKED and s.at > killed) < 30:
                assert time.monotonic() < killed + 40, "no writes acknowledged by a new master"
                producer.send("JavaFailover", f"after-{seq}", stream="s", seq=seq)
                seq += 1
            puller.drain("JavaFailover", history.acked_keys(), timeout=40)
        finally:
            producer.close()
            puller.close()
    history.check(max_duplicates=200, orderly=True)
