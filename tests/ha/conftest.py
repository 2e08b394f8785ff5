"""Fixtures of the HA tests: a remoting client (`procs` is tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from orbitmq.remoting.transport import RemotingClient


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    c = RemotingClient()
    try:
        yield c
    finally:
        await c.close()
