"""Two broker groups: when one group's host is cut off, producers route around it (latency fault
avoidance), the other group's traffic goes on, and nothing acknowledged is lost once it heals."""

from __future__ import annotations

import time

import pytest

from orbitmq.client import Producer
from tests.client.helpers import create_topic, wait_until
from tests.support.history import Outcome
from tests.support.netns import Network
from tests.support.nscluster import Cluster, Load, Recorder

pytestmark = pytest.mark.timeout(120)

TOPIC = "TwoGroups"


async def test_losing_one_group_leaves_the_other_untouched_and_producers_avoid_it(
    net: Network, cluster: Cluster
) -> None:
    cluster.start_broker("a", "broker-a")
    cluster.start_broker("b", "broker-b")
    recorder = Recorder()
    with net.enter("client"):
        async with Producer("FoTwoPG", namesrv_addr=cluster.namesrv, send_latency_fault_enable=True,
                            send_msg_timeout_ms=2000) as producer:
            await create_topic(producer, TOPIC, queues=4)
            consumer = recorder.consumer(cluster.namesrv, "FoTwoCG", TOPIC)
            await consumer.start()
            try:
                load = Load(recorder, producer, TOPIC)

                def acked_on(broker: str, since: float = 0.0) -> int:
                    return sum(1 for s in recorder.history.sends.values()
                               if s.outcome is Outcome.ACKED and s.broker == broker and s.at >= since)

                def delivered_from(broker: str, since: float) -> int:
                    return sum(1 for r in recorder.history.receives if r.queue.startswith(broker + ":") and r.at >= since)

                await wait_until(lambda: acked_on("broker-a") >= 20 and acked_on("broker-b") >= 20, timeout=30)
                net.isolate("a")
                cut = time.monotonic()
                # The producer stops choosing broker-a after its first failure there and keeps
                # getting acknowledgements from broker-b; broker-b's consumers keep receiving.
                await wait_until(lambda: acked_on("broker-b", cut) >= 100, timeout=30)
                await wait_until(lambda: delivered_from("broker-b", cut) >= 100, timeout=30)
                failed_while_cut = [s for s in recorder.history.sends.values()
                                    if s.at >= cut and s.outcome is not Outcome.ACKED]
                avoided_from = max((s.at for s in failed_while_cut), default=cut)
                assert acked_on("broker-a", avoided_from) == 0
                # Every sender lost at most the one send that was in flight to broker-a (then it avoided it).
                assert len(failed_while_cut) <= 4, failed_while_cut
                net.heal("a")
                await load.stop()
                await wait_until(lambda: recorder.history.acked_keys() <= recorder.history.delivered_keys(),
                                 timeout=45, message="acknowledged messages not all consumed after healing")
            finally:
                await consumer.shutdown()
    report = recorder.history.check(max_duplicates=0)
    assert report.acked >= 140
