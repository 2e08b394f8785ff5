"""A consumer with an SQL92 subscription does not start on a broker without property filters."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.client import LitePullConsumer, MessageSelector, Producer, PushConsumer
from orbitmq.errors import BrokerError
from tests.client.helpers import Collector, create_topic
from tests.ha.cluster import broker_conf, start_broker, start_namesrv
from tests.support.procs import ServerProcess

pytestmark = pytest.mark.timeout(60)

TOPIC = "SqlOnPlainBroker"


async def test_sql92_subscriptions_fail_the_start_on_a_broker_with_enable_property_filter_false(
    tmp_path: Path, procs: list[ServerProcess]
) -> None:
    """DefaultMQPushConsumerImpl.start and DefaultLitePullConsumerImpl.start call
    MQClientInstance.checkClientInBroker, which sends CHECK_CLIENT_CONFIG for each non-TAG
    subscription and throws MQClientException(code, remark) when the broker refuses it."""
    ns = start_namesrv(tmp_path)
    procs.append(ns)
    procs.append(start_broker(broker_conf(tmp_path, "broker", ns.addr, "ASYNC_MASTER", enablePropertyFilter="false")))
    async with Producer("SqlPG", namesrv_addr=ns.addr) as producer:
        await create_topic(producer, TOPIC, queues=1)

    push = PushConsumer("SqlPushCG", namesrv_addr=ns.addr, instance_name="sql-refused-push")
    push.subscribe(TOPIC, MessageSelector.by_sql("amount > 5"))
    push.register_listener(Collector())
    with pytest.raises(BrokerError, match="does not support consumer to filter message by SQL92"):
        await push.start()
    await push.shutdown()  # nothing left running: a second shutdown is a no-op

    lite = LitePullConsumer("SqlLiteCG", namesrv_addr=ns.addr, instance_name="sql-refused-lite")
    lite.subscribe(TOPIC, MessageSelector.by_sql("amount > 5"))
    with pytest.raises(BrokerError, match="SQL92"):
        await lite.start()

    tags = PushConsumer("SqlTagCG", namesrv_addr=ns.addr, instance_name="sql-refused-tags")
    tags.subscribe(TOPIC, "*")
    tags.register_listener(Collector())
    await tags.start()  # a TAG subscription needs no check
    await tags.shutdown()
