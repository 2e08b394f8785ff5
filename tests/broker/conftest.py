"""Fixtures of the broker tests: a broker in this process (the raw remoting `client` is tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker.server import Broker
from tests.broker.test_messaging import make_config


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with Broker(make_config(tmp_path, enablePropertyFilter="true")) as b:
        yield b
