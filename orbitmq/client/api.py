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
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import Body, RemotingCommand
from orbitmq.remoting.transport import RemotingClient

SUCCESS = 0
QUERY_NOT_FOUND = 22


def _fields(**values: Any) -> dict[str, str]:
    """Header fields as strings, skipping None (Java flattens only non-null fields)."""
    out: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        out[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def _check(response: RemotingCommand, ok: Iterable[int] = (SUCCESS,)) -> RemotingCommand:
    if response.code not in ok:
        raise BrokerError.for_code(response.code, response.remark)
    return response


def _long(response: RemotingCommand, name: str) -> int:
    value = response.field(name)
    if value is None:
        raise ClientError(f"response to request lacks header field {name!r}")
    return int(value)


class MQClientAPI:
    def __init__(self, remoting: RemotingClient, timeout: float = 3.0) -> None:
        self.remoting = remoting
        self.timeout = timeout

    async def invoke(
        self, addr: str, code: int, fields: dict[str, str] | None = None, body: Body = None,
        timeout: float | None = None,
    ) -> RemotingCommand:
        cmd = RemotingCommand.request(code, fields, body)
        return await self.remoting.invoke(addr, cmd, self.timeout if timeout is None else timeout)

    async def invoke_oneway(self, addr: str, code: int, fields: dict[str, str] | None = None, body: Body = None) -> None:
        await self.remoting.invoke_oneway(addr, RemotingCommand.request(code, fields, body, oneway=True))

    # --- NameServer ---------------------------------------------------------

    async def get_topic_route(self, namesrv: str, topic: str, timeout: float | None = None) -> TopicRouteData:
        """The route of `topic`; `TopicNotExist` (17) when no broker serves it."""
        resp = await self.invoke(
            namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC,
            _fields(topic=topic, acceptStandardJsonOnly=True), timeout=timeout,
        )
        _check(resp)
        body = resp.body_bytes()
        if not body:
            raise BrokerError.for_code(17, f"empty route for topic {topic}")
        return parse_route(body)

    # --- heartbeat and client registration ----------------------------------

    async def send_heartbeat(self, addr: str, heartbeat: dict[str, Any], timeout: float | None = None) -> int:
        """Send HeartbeatData; returns the broker's protocol version."""
        resp = _check(await self.invoke(addr, RequestCode.HEART_BEAT, None, orjson.dumps(heartbeat), timeout))
        return resp.version

    async def unregister_client(
        self, addr: str, client_id: str, producer_group: str | None, consumer_group: str | None
    ) -> None:
        _check(await self.invoke(
            addr, RequestCode.UNREGISTER_CLIENT,
            _fields(clientID=client_id, producerGroup=producer_group, consumerGroup=consumer_group),
        ))

    async def get_consumer_id_list(self, addr: str, group: str) -> list[str]:
        resp = _check(await self.invoke(addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, _fields(consumerGroup=group)))
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
            _fields(offset=msg.commit_log_offset, group=group, delayLevel=delay_level, originMsgId=msg.msg_id,
                    originTopic=msg.topic, unitMode=False, maxReconsumeTimes=max_reconsume_times,
                    bname=broker_name, orbitmqDelayMs=delay_ms, orbitmqLastError=last_error,
                    orbitmqAttempts=attempts),
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
            _fields(consumerGroup=group, topic=mq.topic, queueId=mq.queue_id, queueOffset=offset,
                    maxMsgNums=max_nums, sysFlag=sys_flag, commitOffset=commit_offset,
                    suspendTimeoutMillis=suspend_ms, subscription=sub_expression, subVersion=sub_version,
                    expressionType=expression_type, bname=mq.broker_name),
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
        return PullResult(
            status,
            _long(resp, "nextBeginOffset"),
            _long(resp, "minOffset"),
            _long(resp, "maxOffset"),
            messages,
            suggest_which_broker_id=int(resp.field("suggestWhichBrokerId") or 0),
            message_binary=binary,
        )

    # --- offsets ---------------------------------------------------------------

    async def query_consumer_offset(self, addr: str, group: str, mq: MessageQueue) -> int:
        """The group's stored offset; `QueryNotFound` (22) when none is stored."""
        resp = _check(await self.invoke(
            addr, RequestCode.QUERY_CONSUMER_OFFSET,
            _fields(consumerGroup=group, topic=mq.topic, queueId=mq.queue_id, bname=mq.broker_name),
        ))
        return _long(resp, "offset")

    async def update_consumer_offset(self, addr: str, group: str, mq: MessageQueue, offset: int, oneway: bool) -> None:
        fields = _fields(consumerGroup=group, topic=mq.topic, queueId=mq.queue_id, commitOffset=offset,
                         bname=mq.broker_name)
        if oneway:
            await self.invoke_oneway(addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields)
        else:
            _check(await self.invoke(addr, RequestCode.UPDATE_CONSUMER_OFFSET, fields))

    async def get_max_offset(self, addr: str, mq: MessageQueue) -> int:
        resp = _check(await self.invoke(
            addr, RequestCode.GET_MAX_OFFSET, _fields(topic=mq.topic, queueId=mq.queue_id, bname=mq.broker_name)))
        return _long(resp, "offset")

    async def get_min_offset(self, addr: str, mq: MessageQueue) -> int:
        resp = _check(await self.invoke(
            addr, RequestCode.GET_MIN_OFFSET, _fields(topic=mq.topic, queueId=mq.queue_id, bname=mq.broker_name)))
        return _long(resp, "offset")

    async def search_offset(self, addr: str, mq: MessageQueue, timestamp_ms: int) -> int:
        resp = _check(await self.invoke(
            addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
            _fields(topic=mq.topic, queueId=mq.queue_id, timestamp=timestamp_ms, bname=mq.broker_name)))
        return _long(resp, "offset")

    async def get_earliest_msg_store_time(self, addr: str, mq: MessageQueue) -> int:
        resp = _check(await self.invoke(
            addr, RequestCode.GET_EARLIEST_MSG_STORETIME,
            _fields(topic=mq.topic, queueId=mq.queue_id, bname=mq.broker_name)))
        return _long(resp, "timestamp")

    # --- lookups ----------------------------------------------------------------

    async def view_message(self, addr: str, commit_log_offset: int, timeout: float | None = None) -> MessageExt:
        resp = _check(await self.invoke(
            addr, RequestCode.VIEW_MESSAGE_BY_ID, _fields(offset=commit_log_offset), timeout=timeout))
        msgs = list(iter_records(resp.body_bytes()))
        if not msgs:
            raise ClientError(f"broker {addr} returned no message at offset {commit_log_offset}")
        return msgs[0]

    async def query_message(
        self, addr: str, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int, unique_key: bool,
        timeout: float | None = None,
    ) -> list[MessageExt]:
        """QUERY_MESSAGE by key (or by UNIQ_KEY); [] when the broker finds nothing."""
        fields = _fields(topic=topic, key=key, maxNum=max_num, beginTimestamp=begin_ms, endTimestamp=end_ms)
        fields["_UNIQUE_KEY_QUERY"] = "true" if unique_key else "false"
        resp = await self.invoke(addr, RequestCode.QUERY_MESSAGE, fields, timeout=timeout)
        if resp.code == QUERY_NOT_FOUND:
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
            _fields(topic=topic, defaultTopic=default_topic, readQueueNums=queue_nums, writeQueueNums=queue_nums,
                    perm=perm, topicFilterType="SINGLE_TAG", topicSysFlag=topic_sys_flag, order=order),
        ))
