"""The client instance forgets brokers that left every route (Java's cleanOfflineBroker), without sockets."""

from __future__ import annotations

from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.client.routes import BrokerData, QueueData, TopicRouteData


class Publisher:
    group = "PG"

    def publish_topics(self) -> set[str]:
        return {"T"}


def route(*brokers: BrokerData) -> TopicRouteData:
    return TopicRouteData(tuple(QueueData(b.broker_name, 4, 4, 6) for b in brokers), brokers)


async def test_route_refresh_drops_brokers_and_slaves_no_route_lists_any_more() -> None:
    instance = ClientInstance(ClientConfig(namesrv_addr="127.0.0.1:1"), "test@offline")
    try:
        instance.register_producer(Publisher())  # type: ignore[arg-type]
        full = route(BrokerData("c", "a", {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}),
                     BrokerData("c", "b", {0: "10.0.0.3:10911"}))
        instance._install_route("T", full)
        assert set(instance.broker_addrs) == {"a", "b"}

        # Broker b stopped and a's slave went away: the NameServer's next route omits them.
        shrunk = route(BrokerData("c", "a", {0: "10.0.0.1:10911"}))

        async def fetch(topic: str, timeout: float | None = None) -> TopicRouteData:
            return shrunk

        instance.fetch_route = fetch  # type: ignore[method-assign]
        await instance.refresh_routes()
        assert instance.broker_addrs == {"a": {0: "10.0.0.1:10911"}}
    finally:
        await instance.remoting.close()


async def test_brokers_still_serving_some_cached_route_are_kept() -> None:
    instance = ClientInstance(ClientConfig(namesrv_addr="127.0.0.1:1"), "test@kept")
    try:
        instance._install_route("Other", route(BrokerData("c", "b", {0: "10.0.0.3:10911"})))
        instance._install_route("T", route(BrokerData("c", "a", {0: "10.0.0.1:10911"})))
        instance.clean_offline_brokers()
        assert set(instance.broker_addrs) == {"a", "b"}
    finally:
        await instance.remoting.close()
