"""Shared fixtures of the limits tests: remoting clients closed after each test."""

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


@pytest.fixture
async def clients() -> AsyncIterator[list[RemotingClient]]:
    made = [RemotingClient(), RemotingClient()]
    try:
        yield made
    finally:
        for c in made:
            await c.close()
