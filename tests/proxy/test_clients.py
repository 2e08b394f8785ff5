"""The proxy's client registry: gRPC clients are forgotten after silence, never while a stream is open."""

from __future__ import annotations

import asyncio
import time

import pytest

from orbitmq.proxy.backend import Backend
from orbitmq.proxy.clients import CLIENT_EXPIRY_SECONDS, Metadata
from orbitmq.proxy.codec import GrpcStatusError
from orbitmq.proxy.pb import definition_pb2 as pb
from orbitmq.proxy.service import MessagingService


async def test_silent_clients_expire_and_streaming_ones_do_not() -> None:
    service = MessagingService(Backend(["127.0.0.1:1"]), ("127.0.0.1", 8081))
    quiet = service.clients.get_or_create(Metadata("quiet@1"))
    streaming = service.clients.get_or_create(Metadata("streaming@1"))
    streaming.streams.append(asyncio.Queue())
    later = time.monotonic() + CLIENT_EXPIRY_SECONDS + 1
    assert await service.clients.expire(later) == ["quiet@1"]
    assert service.clients.get("streaming@1") is streaming and service.clients.get("quiet@1") is None
    assert quiet.remoting is None
    await service.clients.terminate("streaming@1")
    assert streaming.streams[0].get_nowait() is None  # its Telemetry stream is ended


def test_a_call_without_a_client_id_where_one_is_needed() -> None:
    service = MessagingService(Backend(["127.0.0.1:1"]), ("127.0.0.1", 8081))
    with pytest.raises(GrpcStatusError) as err:
        service.clients.get_or_create(Metadata(""))
    assert err.value.code == pb.CLIENT_ID_REQUIRED
