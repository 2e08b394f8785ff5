"""A SYNC_MASTER and its slave on their own hosts: while the slave is cut off nothing more is
acknowledged, and after the master is SIGKILLed every acknowledged message is still consumed
(from the slave)."""

from __future__ import annotations

import time

import pytest

from orbitmq.client import Producer
from tests.client.helpers import create_topic, wait_until
from tests.support.history import Outcome
from tests.support.netns import Network
from tests.support.nscluster import Cluster, Load, Recorder

pytestmark = pytest.mark.timeout(120)

TOPIC = "SyncMaster"


async def test_a_cut_off_slave_stops_acknowledgements_and_a_killed_master_loses_nothing_acknowledged(
    net: Network, cluster: Cluster
) -> None:
    cluster.start_broker("m", "broker-a", "SYNC_MASTER")
    cluster.start_broker("s", "broker-a", "SLAVE", 1)
    recorder = Recorder()
    with net.enter("client"):
        async with Producer("FoSyncPG", namesrv_addr=cluster.namesrv, send_msg_timeout_ms=5000) as producer:
            await create_topic(producer, TOPIC, queues=4)
            consumer = recorder.consumer(cluster.namesrv, "FoSyncCG", TOPIC)
            await consumer.start()
            try:
                load = Load(recorder, producer, TOPIC)
                sends = recorder.history.sends

                def acked_since(moment: float) -> int:
                    return sum(1 for s in list(sends.values()) if s.outcome is Outcome.ACKED and s.at >= moment)

                def unconfirmed_since(moment: float) -> int:
                    return sum(1 for s in list(sends.values()) if s.outcome is not Outcome.ACKED and s.at >= moment)

                await wait_until(lambda: acked_since(0) >= 50, timeout=30)
                net.cut("m", "s")
                cut = time.monotonic()
                # Every sender's next sends end unconfirmed (FLUSH_SLAVE_TIMEOUT / SLAVE_NOT_AVAILABLE).
                await wait_until(lambda: unconfirmed_since(cut) >= 8, timeout=40)
                quiet_from = time.monotonic()
                await wait_until(lambda: unconfirmed_since(quiet_from) >= 4, timeout=40)
                assert acked_since(quiet_from) == 0, "acknowledged while the only replica was cut off"
                net.mend("m", "s")
                mended = time.monotonic()
                await wait_until(lambda: acked_since(mended) >= 50, timeout=40)
                cluster.kill("m")
                await load.stop()
                await wait_until(lambda: recorder.history.acked_keys() <= recorder.history.delivered_keys(),
                                 timeout=45, message="acknowledged messages missing after the master's SIGKILL")
            finally:
                await consumer.shutdown()
    report = recorder.history.check(max_duplicates=200)
    assert report.unknown >= 8
