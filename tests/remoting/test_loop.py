"""The event loop helpers pick uvloop when asked and available, asyncio otherwise."""

from __future__ import annotations

import asyncio

import pytest

from orbitmq.remoting.loop import install_uvloop, run, uvloop_available


async def loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


def test_run_uses_uvloop_when_available_and_asyncio_when_asked_not_to() -> None:
    if uvloop_available():
        assert run(loop_module()).startswith("uvloop")
    assert run(loop_module(), use_uvloop=False).startswith("asyncio")


def test_install_uvloop_sets_the_policy_for_new_loops() -> None:
    if not uvloop_available():
        pytest.skip("uvloop is not installed")
    try:
        assert install_uvloop() is True
        assert asyncio.run(loop_module()).startswith("uvloop")
    finally:
        asyncio.set_event_loop_policy(None)
