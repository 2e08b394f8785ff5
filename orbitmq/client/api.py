"""MQClientAPI: every remoting call the client makes, typed.

Each method builds one request (headers under RocketMQ's field names, §3),
sends it with the shared RemotingClient and turns the answer into Python
values or a `BrokerError` carrying RocketMQ's code and remark. Timeouts are
seconds. Nothing here retries: retry policy belongs to the callers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from orbitmq.client.queue import MessageQueue
from orbitmq.client.results import PULL_STATUS_BY_CODE, PullResult, PullStatus
from orbitmq.client.routes import TopicRouteData, parse_route
from orbitmq.common.message import MessageExt
from orbitmq.common.record import iter_records
from orbitmq.errors import BrokerError, ClientError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import Body, RemotingCommand
from orbitmq.remoting.header_base import CommandHeader
from orbitmq.remoting.headers import (
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryMessageRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from orbitmq.remoting.transport import RemotingClient


def _check(response: RemotingCommand, ok: Iterable[int] = (ResponseCode.SUCCESS,)) -> RemotingCommand:
    if response.code not in ok:
        raise BrokerError.for_code(response.code, response.remark)
    return response


class MQClientAPI:
    def __init__(self, remoting: RemotingClient, timeout: float = 3.0) -> None:
        self.remoting = remoting
        self.timeout = timeout

    async def invoke(
        self, addr: str, code: int, fields: CommandHeader | dict[str, str] | None = None, body: Body = None,
        timeout: float | None = None,
    ) -> RemotingCommand:
        if isinstance(fields, CommandHeader):
            fields = fields.to_ext_fields()
        cmd = RemotingCommand.request(code, fields, body)
        return await self.remoting.invoke(addr, cmd, self.timeout if timeout is None else timeout)

    async def invoke_oneway(
        self, addr: str, code: int, fields: CommandHeader | dict[str, str] | None = None, body: Body = None
    ) -> None:
        if isinstance(fields, CommandHeader):
            fields = fields.to_ext_fields()
        await self.remoting.invoke_oneway(addr, RemotingCommand.request(code, fields, body, oneway=True))

    # --- NameServer ---------------------------------------------------------

    async def get_topic_route(self, namesrv: str, topic: str, timeout: float | None = None) -> TopicRouteData:
        """The route of `topic`; `TopicNotExist` (17) when no broker serves it."""
        resp = await self.invoke(
            namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC,
            GetRouteInfoRequestHeader(topic=topic, accept_standard_json_only=True), timeout=timeout,
        )
        _check(resp)
        body = resp.body_bytes()
        if not body:
            raise BrokerError.for_code(ResponseCode.TOPIC_NOT_EXIST, f"empty route for topic {topic}")
        return parse_route(body)

    # --- heartbeat and client registration ----------------------------------

    async def send_heartbeat(self, addr: str, heartbeat: dict[str, Any], timeout: float | None = None) -> int:
        """Send HeartbeatData; returns the broker's protocol version."""
        resp = _check(await self.invoke(addr, RequestCode.HEART_BEAT, None, orjson.dumps(heartbeat), timeout))
        return resp.version

    async def check_client_config(self, addr: str, group: str, client_id: str, subscription: dict[str, Any]) -> None:
        """CHECK_CLIENT_CONFIG (MQClientAPIImpl.checkClientInBroker): can the broker run this
        subscription? A refusal raises `BrokerError` with the broker's code and remark."""
        body = orjson.dumps({"clientId": client_id, "group": group, "subscriptionData": subscription})
        _check(await self.invoke(addr, RequestCode.CHECK_CLIENT_CONFIG, None, body))

    async def unregister_client(
        self, addr: str, client_id: str, producer_group: str | None, consumer_group: str | None
    ) -> None:
        _check(await self.invoke(
            addr, RequestCode.UNREGISTER_CLIENT,
            UnregisterClientRequestHeader(
                client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
            ),
        ))

    async def get_consumer_id_list(self, addr: str, group: str) -> list[str]:
        resp = _check(await self.invoke(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader(consumer_group=group)))
        body = resp.body_bytes()
        return [str(c) for c in orjson.loads(body).get("consumerIdList", [])] if body else []

    # --- send ----------------------------------------------------------------

    async def send(
        self, addr: str, code: int, fields: dict[str, str], body: Body, timeout: float
    ) -> RemotingCommand:
        """One send request; the caller maps the response code (0/10/11/12 mean stored)."""
        return await self.invoke(addr, code, fields, body, timeout)

    async def send_oneway(self, addr: str, code: int, fields: dict[str, str], body: Body) -> None:
        await self.invoke_oneway(addr, code, fields, body)

    async def consumer_send_back(
        self, addr: str, broker_name: str, msg: MessageExt, group: str, delay_level: int,
        max_reconsume_times: int, timeout: float = 5.0, *, delay_ms: int | None = None,
        last_error: str | None = None, attempts: int | None = None,
    ) -> None:
        """Return a message for redelivery (CONSUMER_SEND_MSG_BACK, §3.5).

        `delay_ms`, `last_error` and `attempts` travel in OrbitMQ's own header
        fields (broker/handlers/sendback.py); a RocketMQ broker ignores them.
        """
        _check(await self.invoke(
            addr, RequestCode.CONSUMER_SEND_MSG_BACK,
            ConsumerSendMsgBackRequestHeader(
                offset=msg.commit_log_offset, group=group, delay_level=delay_level, origin_msg_id=msg.msg_id,
                origin_topic=msg.topic, unit_mode=False, max_reconsume_times=max_reconsume_times,
                bname=broker_name, orbitmq_delay_ms=delay_ms, orbitmq_last_error=last_error,
                orbitmq_attempts=attempts,
            ),
            timeout=timeout,
        ))

    # --- pull ----------------------------------------------------------------

    async def pull(
        self, addr: str, mq: MessageQueue, *, group: str, offset: int, max_nums: int, sys_flag: int,
        commit_offset: int, suspend_ms: int, sub_expression: str | None, sub_version: int,
        expression_type: str = "TAG", timeout: float, decode: bool = True,
    ) -> PullResult:
        """PULL_MESSAGE; FOUND results carry the decoded messages (not yet tag-filtered).

        With `decode=False` they carry the raw records in `message_binary` instead.
        """
        resp = await self.invoke(
            addr, RequestCode.PULL_MESSAGE,
            PullMessageRequestHeader(
                consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, queue_offset=offset,
                max_msg_nums=max_nums, sys_flag=sys_flag, commit_offset=commit_offset,
                suspend_timeout_millis=suspend_ms, subscription=sub_expression, sub_version=sub_version,
                expression_type=expression_type, bname=mq.broker_name,
            ),
            timeout=timeout,
        )
        status = PULL_STATUS_BY_CODE.get(resp.code)
        if status is None:
            raise BrokerError.for_code(resp.code, resp.remark)
        messages: list[MessageExt] = []
        binary = b""
        if status is PullStatus.FOUND and resp.body is not None:
            if decode:
                body = resp.body if isinstance(resp.body, (bytes, bytearray, memoryview)) else resp.body_bytes()
                messages = list(iter_records(body))
            else:
                binary = resp.body_bytes()
        header = PullMessageResponseHeader.from_ext_fields(resp.ext_fields)
        return PullResult(
            status,
            header.next_begin_offset,
            header.min_offset,
            header.max_offset,
            messages,
            suggest_which_broker_id=header.suggest_which_broker_id,
            message_binary=binary,
        )

    # --- offsets ---------------------------------------------------------------

    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int:
        """The group's stored offset; `QueryNotFound` (22) when none is stored."""
        resp = _check(await self.invoke(
            addr, RequestCode.QUERY_CONSUMER_OFFSET,
            QueryConsumerOffsetRequestHeader(
                consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name
            ),
        ))
        return QueryConsumerOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset

    async def update_consumer_offset(self, addr: str, group: str, mq: MessageQueue, offset: int, oneway: bool) -> None:
        fields = UpdateConsumerOffsetRequestHeader(
            consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, commit_offset=offset, bname=mq.broker_name
        )
        if oneway:
            await self.invoke_oneway(addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields)
        else:
            _check(await self.invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields))

    async def get_max_offset(self, addr: str, mq: MessageQueue) -> int:
        resp = _check(await self.invoke(
            addr, RequestCode.GET_MAX_OFFSET,
            GetMaxOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name)))
        return GetMaxOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset

    async def get_min_offset(self, addr: str, mq: MessageQueue) -> int:
        resp = _check(await self.invoke(
            addr, RequestCode.GET_MIN_OFFSET,
            GetMinOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name)))
        return GetMinOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp_ms: int) -> int:
        resp = _check(await self.invoke(
            addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            SearchOffsetRequestHeader(topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp_ms,
                                      bname=mq.broker_name)))
        return SearchOffsetResponseHeader.from_ext_fields(resp.ext_fields).offset

    async def get_earliest_msg_store_time(self, addr: str, mq: MessageQueue) -> int:
        resp = _check(await self.invoke(
            addr, RequestCode.GET_EARLIEST_MSG_STORETIME,
            GetEarliestMsgStoretimeRequestHeader(topic=mq.topic, queue_id=mq.queue_id, bname=mq.broker_name)))
        return GetEarliestMsgStoretimeResponseHeader.from_ext_fields(resp.ext_fields).timestamp

    # --- lookups ----------------------------------------------------------------

    async def view_message(self, addr: str, commit_log_offset: int, timeout: float | None = None) -> MessageExt:
        resp = _check(await self.invoke(
            addr, RequestCode.VIEW_MESSAGE_BY_ID, ViewMessageRequestHeader(offset=commit_log_offset),
            timeout=timeout))
        msgs = list(iter_records(resp.body_bytes()))
        if not msgs:
            raise ClientError(f"broker {addr} returned no message at offset {commit_log_offset}")
        return msgs[0]

    async def query_message(
        self, addr: str, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int, unique_key: bool,
        timeout: float | None = None,
    ) -> list[MessageExt]:
        """QUERY_MESSAGE by key (or by UNIQ_KEY); [] when the broker finds nothing."""
        header = QueryMessageRequestHeader(topic=topic, key=key, max_num=max_num, begin_timestamp=begin_ms,
                                           end_timestamp=end_ms, unique_key_query=unique_key)
        resp = await self.invoke(addr, RequestCode.QUERY_MESSAGE, header, timeout=timeout)
        if resp.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        _check(resp)
        return list(iter_records(resp.body_bytes()))

    # --- orderly locks ------------------------------------------------------------

    async def lock_batch(self, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue]) -> set[MessageQueue]:
        """Lock queues on the broker; returns those actually locked by us."""
        body = orjson.dumps({"clientId": client_id, "consumerGroup": group, "mqSet": [mq.to_json() for mq in mqs]})
        resp = _check(await self.invoke(addr, RequestCode.LOCK_BATCH_MQ, None, body))
        raw = resp.body_bytes()
        return {MessageQueue.from_json(o) for o in orjson.loads(raw).get("lockOKMQSet", [])} if raw else set()

    async def unlock_batch(
        self, addr: str, group: str, client_id: str, mqs: Iterable[MessageQueue], oneway: bool = False
    ) -> None:
        body = orjson.dumps({"clientId": client_id, "consumerGroup": group, "mqSet": [mq.to_json() for mq in mqs]})
        if oneway:
            await self.invoke_oneway(addr, RequestCode.UNLOCK_BATCH_MQ, None, body)
        else:
            _check(await self.invoke(addr, RequestCode.UNLOCK_BATCH_MQ, None, body))

    # --- topic administration ---------------------------------------------------------

    async def create_topic(
        self, addr: str, default_topic: str, topic: str, queue_nums: int, perm: int = 6, order: bool = False,
        topic_sys_flag: int = 0,
    ) -> None:
        _check(await self.invoke(
            addr, RequestCode.UPDATE_AND_CREATE_TOPIC,
            CreateTopicRequestHeader(
                topic=topic, default_topic=default_topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums,
                perm=perm, topic_filter_type="SINGLE_TAG", topic_sys_flag=topic_sys_flag, order=order,
            ),
        ))
