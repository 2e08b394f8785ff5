"""SYNC_MASTER ack waiting: shared wake-ups, timeouts, closing."""

from __future__ import annotations

import asyncio

from orbitmq.broker.ha.acks import AckWaiters


async def test_a_wait_already_covered_returns_at_once() -> None:
    acks = AckWaiters()
    acks.ack(100)
    assert await acks.wait(100, 1.0)


async def test_one_ack_releases_every_put_it_covers_and_only_those() -> None:
    acks = AckWaiters()
    waits = [asyncio.ensure_future(acks.wait(end, 5.0)) for end in (10, 20, 30)]
    await asyncio.sleep(0)
    acks.ack(20)
    await asyncio.sleep(0)
    assert [w.done() for w in waits] == [True, True, False]
    acks.ack(35)
    assert await asyncio.gather(*waits) == [True, True, True]


async def test_a_wait_without_ack_times_out() -> None:
    acks = AckWaiters()
    assert not await acks.wait(10, 0.05)


async def test_a_later_wait_outlives_an_earlier_timeout() -> None:
    acks = AckWaiters()
    first = asyncio.ensure_future(acks.wait(10, 0.05))
    await asyncio.sleep(0.02)
    second = asyncio.ensure_future(acks.wait(20, 1.0))
    assert not await first
    acks.ack(20)
    assert await second


async def test_an_ack_that_goes_backwards_is_ignored() -> None:
    acks = AckWaiters()
    acks.ack(50)
    acks.ack(40)
    assert acks.acked == 50


async def test_closing_answers_waiters_false() -> None:
    acks = AckWaiters()
    waiter = asyncio.ensure_future(acks.wait(10, 10.0))
    await asyncio.sleep(0)
    acks.close()
    assert not await waiter


async def test_many_puts_started_outside_a_task_share_one_ack() -> None:
    from orbitmq.remoting.eager import start_eagerly

    acks = AckWaiters()
    results: list[bool] = []

    async def put(end: int) -> None:
        results.append(await acks.wait(end, 5.0))

    loop = asyncio.get_running_loop()
    tasks: list[asyncio.Task[None] | None] = []

    def receive() -> None:  # as a transport callback does it: outside any task
        tasks.extend(start_eagerly(loop, put(end)) for end in range(1, 65))

    loop.call_soon(receive)
    await asyncio.sleep(0.01)
    acks.ack(64)
    await asyncio.gather(*(t for t in tasks if t is not None))
    assert results == [True] * 64
