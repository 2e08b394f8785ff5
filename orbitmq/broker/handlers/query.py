"""QUERY_MESSAGE (12) by key or unique key, and VIEW_MESSAGE_BY_ID (33) by CommitLog offset.

Bodies are the stored records as CommitLog slices, released after the write.
"""

from __future__ import annotations

import asyncio

from orbitmq.broker.config import LiveConfig
from orbitmq.broker.handlers.fields import Registry, boolean, integer, text, topic_field
from orbitmq.common.names import UNIQUE_KEY_QUERY
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.headers import QueryMessageResponseHeader
from orbitmq.store.api import MessageStore, Releasable


def release_after_write(result: Releasable) -> None:
    """Release pinned files two loop turns later, after the transport wrote the response."""
    loop = asyncio.get_running_loop()
    loop.call_soon(loop.call_soon, result.release)


class QueryHandlers:
    def __init__(self, *, live: LiveConfig, store: MessageStore) -> None:
        self.live = live
        self.store = store

    def register(self, server: Registry) -> None:
        server.register(RequestCode.QUERY_MESSAGE, self.query_message)
        server.register(RequestCode.VIEW_MESSAGE_BY_ID, self.view_message)

    async def query_message(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        topic = topic_field(request)
        key = text(request, "key")
        max_num = integer(request, "maxNum")
        if boolean(request, UNIQUE_KEY_QUERY):
            max_num = self.live.value.default_query_max_num
        begin = integer(request, "beginTimestamp", 0)
        end = integer(request, "endTimestamp", 0)
        result = self.store.query_message(topic, key, max(max_num, 0), begin, end)
        fields = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        ).to_ext_fields()
        if not result.buffers:
            result.release()
            return request.response(
                ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", fields
            )
        response = request.response(ResponseCode.SUCCESS, None, fields, result.buffers)
        release_after_write(result)
        return response

    async def view_message(self, request: RemotingCommand, peer: Peer) -> RemotingCommand:
        offset = integer(request, "offset")
        found = self.store.select_one_message_by_offset(offset) if offset >= 0 else None
        if found is None:
            return request.response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
        response = request.response(ResponseCode.SUCCESS, body=[found.buffer])
        release_after_write(found)
        return response
