"""Shared fixtures of the limits tests: two remoting clients closed after each test (one `client` is
tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from orbitmq.remoting.transport import RemotingClient


@pytest.fixture
async def clients() -> AsyncIterator[list[RemotingClient]]:
    made = [RemotingClient(), RemotingClient()]
    try:
        yield made
    finally:
        for c in made:
            await c.close()
