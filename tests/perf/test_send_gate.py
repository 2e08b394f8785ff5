"""The send gate bounds puts in flight, hands freed slots over in arrival order and survives cancellation."""

from __future__ import annotations

import asyncio

from orbitmq.broker.handlers.send import SendGate


async def test_a_free_slot_is_taken_without_waiting_and_a_full_gate_refuses_the_fast_path() -> None:
    gate = SendGate(max_in_flight=2)
    assert gate.try_enter() and gate.try_enter()
    assert not gate.try_enter()
    gate.leave()
    assert gate.try_enter()
    assert gate.in_flight == 2


async def test_waiters_get_freed_slots_in_arrival_order() -> None:
    gate = SendGate(max_in_flight=1)
    await gate.enter()
    order: list[int] = []

    async def sender(n: int) -> None:
        async with gate:
            order.append(n)
            await asyncio.sleep(0)

    tasks = [asyncio.create_task(sender(n)) for n in range(3)]
    await asyncio.sleep(0)
    assert not gate.try_enter()  # queued waiters come before newcomers
    gate.leave()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert order == [0, 1, 2]
    assert gate.in_flight == 0


async def test_a_cancelled_waiter_neither_keeps_nor_loses_a_slot() -> None:
    gate = SendGate(max_in_flight=1)
    await gate.enter()
    waiting = asyncio.create_task(gate.enter())
    await asyncio.sleep(0)
    waiting.cancel()
    await asyncio.gather(waiting, return_exceptions=True)
    gate.leave()
    assert gate.in_flight == 0 and gate.try_enter()


async def test_a_waiter_cancelled_after_being_handed_a_slot_passes_it_on() -> None:
    gate = SendGate(max_in_flight=1)
    await gate.enter()
    first = asyncio.create_task(gate.enter())
    second = asyncio.create_task(gate.enter())
    await asyncio.sleep(0)
    gate.leave()  # hands the slot to `first` ...
    first.cancel()  # ... which is cancelled before it runs
    await asyncio.gather(first, return_exceptions=True)
    await asyncio.wait_for(second, 5)
    assert gate.in_flight == 1
    gate.leave()
    assert gate.in_flight == 0
