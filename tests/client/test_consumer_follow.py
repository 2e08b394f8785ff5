"""Consumers follow a failover as producers do: a pull or an offset request that fails because
its broker is gone looks the topic's route up again at once, not at the next 30 s poll."""

from __future__ import annotations

import asyncio
import socket

import pytest

from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance, broker_gone
from orbitmq.client.pulling import MASTERLESS_SUSPEND_MS, BrokerOffsets, PullHelper
from orbitmq.client.queue import MessageQueue
from orbitmq.client.routes import BrokerData, QueueData, TopicRouteData
from orbitmq.common.filter import build_subscription
from orbitmq.errors import (
    BrokerError,
    ClientError,
    ConnectError,
    RemotingError,
    ServiceNotAvailable,
    TopicNotExist,
)
from orbitmq.remoting.codes import ResponseCode
from tests.support.waiting import until

pytestmark = pytest.mark.timeout(30)


def gone_addr() -> str:
    """An address nothing listens on (a broker that was SIGKILLed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def route(addrs: dict[int, str]) -> TopicRouteData:
    return TopicRouteData((QueueData("b", 4, 4, 6),), (BrokerData("c", "b", addrs),))


async def start_instance(master: str) -> tuple[ClientInstance, list[str]]:
    instance = ClientInstance(ClientConfig(namesrv_addr="127.0.0.1:1"), "test@follow")
    instance._install_route("T", route({0: master}))
    asked: list[str] = []
    original = instance.refresh_route_soon

    def refresh(topic: str) -> None:
        asked.append(topic)
        original(topic)

    instance.refresh_route_soon = refresh  # type: ignore[method-assign]
    return instance, asked


async def test_a_pull_from_a_gone_master_looks_the_route_up_and_the_next_pull_goes_to_the_new_master() -> None:
    instance, asked = await start_instance(gone_addr())
    new_master = gone_addr()

    async def fetch(topic: str, timeout: float | None = None) -> TopicRouteData:
        return route({0: new_master})

    instance.fetch_route = fetch  # type: ignore[method-assign]
    helper = PullHelper(instance, "G", start_inner_producer=None)  # type: ignore[arg-type]
    mq = MessageQueue("T", "b", 0)
    sd = build_subscription("T", "*")
    try:
        with pytest.raises(RemotingError):
            await helper.pull(mq, sd, 0, 32, 0, 0, 0, 2.0, send_expression=True)
        assert asked == ["T"]
        await until(lambda: _is(instance.master_addr("b"), new_master), timeout=5)
    finally:
        await asyncio.gather(*instance._route_refreshes)
        await instance.remoting.close()


async def test_an_offset_commit_to_a_gone_broker_looks_the_route_up() -> None:
    instance, asked = await start_instance(gone_addr())

    async def fetch(topic: str, timeout: float | None = None) -> TopicRouteData:
        raise TopicNotExist("no route yet")

    instance.fetch_route = fetch  # type: ignore[method-assign]
    try:
        with pytest.raises(RemotingError):
            await BrokerOffsets(instance).update_consumer_offset("G", MessageQueue("T", "b", 1), 5, oneway=False)
        assert asked == ["T"]
    finally:
        await asyncio.gather(*instance._route_refreshes)
        await instance.remoting.close()


def test_which_failures_mean_the_broker_is_gone() -> None:
    assert broker_gone(ConnectError("connection refused"))
    assert broker_gone(ServiceNotAvailable("not serving"))
    assert broker_gone(BrokerError("slave not available", code=ResponseCode.SLAVE_NOT_AVAILABLE))
    assert broker_gone(ClientError("The broker[b] not exist"))
    assert not broker_gone(BrokerError("busy", code=ResponseCode.FLOW_CONTROL))
    assert not broker_gone(ClientError("bad argument"))


async def _is(value: object, expected: object) -> bool:
    return value == expected


async def test_a_pull_while_the_route_has_no_master_parks_briefly_on_the_slave_and_looks_the_route_up() -> None:
    """During a failover the route lists only slaves: a pull parked there for the whole suspend
    time (15 s) would hold the consumer on the slave long after the new master took over."""
    instance, asked = await start_instance(gone_addr())
    slave = gone_addr()
    instance._install_route("T", route({1: slave}))
    seen: list[tuple[str, int]] = []

    async def pull(addr: str, mq: MessageQueue, **kw: object) -> None:
        seen.append((addr, int(kw["suspend_ms"])))  # type: ignore[call-overload]
        raise ConnectError("stop here")

    async def fetch(topic: str, timeout: float | None = None) -> TopicRouteData:
        return route({1: slave})

    instance.api.pull = pull  # type: ignore[method-assign,assignment]
    instance.fetch_route = fetch  # type: ignore[method-assign]
    helper = PullHelper(instance, "G", start_inner_producer=None)  # type: ignore[arg-type]
    try:
        with pytest.raises(RemotingError):
            await helper.pull(MessageQueue("T", "b", 0), build_subscription("T", "*"), 0, 32, 0, 0, 15_000, 30.0,
                              send_expression=True)
        assert seen == [(slave, MASTERLESS_SUSPEND_MS)]
        assert asked and set(asked) == {"T"}
    finally:
        await asyncio.gather(*instance._route_refreshes)
        await instance.remoting.close()
