"""Run the socket tests of the remoting layer on both event loops.

uvloop's transports differ from asyncio's in small ways (they are not
`asyncio.Transport` instances, for one), so the transport tests run on each.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest

from orbitmq.remoting.loop import loop_factory, uvloop_available

BOTH_LOOPS = {"test_transport.py", "test_memory_budget.py"}


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    factories = {"asyncio": asyncio.new_event_loop}
    if item.path.name in BOTH_LOOPS and uvloop_available():
        factories["uvloop"] = loop_factory(use_uvloop=True)
    return factories
