"""Event loop helpers: use uvloop when it is installed, plain asyncio otherwise.

uvloop roughly halves the cost of a future and of a loopback round trip on
this kind of machine, so servers and benchmarks prefer it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def uvloop_available() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def loop_factory(use_uvloop: bool = True) -> Callable[[], asyncio.AbstractEventLoop]:
    """A new-event-loop function: uvloop's when asked for and installed, asyncio's otherwise."""
    if use_uvloop:
        try:
            import uvloop
        except ImportError:
            pass
        else:
            return uvloop.new_event_loop
    return asyncio.new_event_loop


def install_uvloop() -> bool:
    """Make uvloop the default loop policy for this process; False when it is not installed."""
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


def run(coro: Coroutine[Any, Any, T], *, use_uvloop: bool = True, debug: bool | None = None) -> T:
    """`asyncio.run(coro)` on a uvloop loop when available (and `use_uvloop`)."""
    with asyncio.Runner(loop_factory=loop_factory(use_uvloop), debug=debug) as runner:
        return runner.run(coro)
