"""A full disk (issue 10, item 12): sends are answered 14 SERVICE_NOT_AVAILABLE "disk full"
from the first failing write, and the broker logs one line when writes start failing and
one when they work again — no traceback per send, none per checkpoint round.

The full disk is simulated: the store's write raises what a failed block reservation
raises (StoreError from OSError ENOSPC), and the checkpoint's file write raises ENOSPC.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker import timer
from orbitmq.broker.diskstate import is_disk_full
from orbitmq.broker.server import Broker
from orbitmq.broker.timer.index import TimerCheckpoint
from orbitmq.common.message import Message, MessageExtBatch, MessageExtBrokerInner
from orbitmq.common.record import encode_batch
from orbitmq.errors import DiskFull, StoreError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.transport import RemotingClient
from orbitmq.store.api import PutMessageResult
from orbitmq.store.store import DefaultMessageStore
from tests.broker.helpers import send_v2
from tests.broker.test_messaging import create_topic, make_config

pytestmark = pytest.mark.timeout(60)


def no_space() -> StoreError:
    """What the store raises when a new file's blocks cannot be reserved."""
    try:
        raise OSError(errno.ENOSPC, "No space left on device")
    except OSError as exc:
        try:
            raise StoreError("cannot reserve 1048576 bytes for a store file: No space left on device") from exc
        except StoreError as store_error:
            return store_error


class FillableStore(DefaultMessageStore):
    """The file store, whose writes fail as on a full disk while `full` is set."""

    full = False

    async def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        if self.full:
            raise no_space()
        return await super().put_message(msg)

    async def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        if self.full:
            raise no_space()
        return await super().put_messages(batch)


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with Broker(make_config(tmp_path), store_factory=FillableStore) as b:
        yield b


def broker_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("orbitmq") and r.levelno >= logging.WARNING]


async def test_sends_on_a_full_disk_answer_14_and_log_one_line_per_change(
    broker: Broker, client: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    addr = broker.broker_addr
    await create_topic(client, addr, "T", queues=1)
    store = broker.store
    assert isinstance(store, FillableStore)
    store.full = True
    with caplog.at_level(logging.INFO):
        for i in range(5):
            response = await send_v2(client, addr, "T", f"m{i}".encode())
            assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE
            assert "disk full" in (response.remark or "")
        batch = await send_v2(client, addr, "T", encode_batch([Message("T", b"b1"), Message("T", b"b2")]), code=RequestCode.SEND_BATCH_MESSAGE)
        assert batch.code == ResponseCode.SERVICE_NOT_AVAILABLE and "disk full" in (batch.remark or "")
        lines = broker_lines(caplog)
        assert [r.getMessage() for r in lines] == [
            "message store: disk full, writes fail until space is freed (No space left on device)"
        ]
        assert not [r for r in caplog.records if r.exc_info]

        store.full = False
        assert (await send_v2(client, addr, "T", b"after")).code == ResponseCode.SUCCESS
        assert (await send_v2(client, addr, "T", b"after again")).code == ResponseCode.SUCCESS
        assert [r.getMessage() for r in broker_lines(caplog)[1:]] == ["message store: writable again"]

        store.full = True
        assert (await send_v2(client, addr, "T", b"full again")).code == ResponseCode.SERVICE_NOT_AVAILABLE
        assert len(broker_lines(caplog)) == 3
    assert not [r for r in caplog.records if r.exc_info]


async def test_the_timer_checkpoint_on_a_full_disk_logs_once_not_every_round(
    broker: Broker, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    timers = broker.timers
    assert timers is not None
    writes: list[str] = []

    def full_disk(path: str, text: str | bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", path)

    def working(path: str, text: str | bytes) -> None:
        writes.append(path)

    monkeypatch.setattr(timer.service, "write_atomically", full_disk)
    with caplog.at_level(logging.INFO):
        for round_ in range(5):
            timers._latest = TimerCheckpoint(0, round_ + 1, 0)  # something new to save every round
            await timers.save_once()
        lines = broker_lines(caplog)
        assert len(lines) == 1 and "disk full" in lines[0].getMessage() and "timer checkpoint" in lines[0].getMessage()
        monkeypatch.setattr(timer.service, "write_atomically", working)
        await timers.save_once()
        await timers.save_once()
        assert writes == [timers.path]
        assert [r.getMessage() for r in broker_lines(caplog)[1:]] == [f"timer checkpoint {timers.path}: writable again"]
    assert not [r for r in caplog.records if r.exc_info]


def test_disk_full_is_recognised_through_the_cause_chain() -> None:
    assert is_disk_full(no_space())
    assert is_disk_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert is_disk_full(DiskFull("x"))
    assert not is_disk_full(StoreError("corrupt"))
    assert not is_disk_full(OSError(errno.EIO, "Input/output error"))
    assert DiskFull("x").code == ResponseCode.SERVICE_NOT_AVAILABLE
