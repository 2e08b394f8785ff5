"""TransactionProducer: messages that become visible only if a local transaction commits (§6.8).

    class Orders:
        def execute_local_transaction(self, msg, arg):      # runs right after the half message is stored
            db.insert_order(arg)
            return LocalTransactionState.COMMIT_MESSAGE
        def check_local_transaction(self, msg):             # the broker asks about an unresolved one
            return LocalTransactionState.COMMIT_MESSAGE if db.has_order(msg.keys[0]) else \\
                LocalTransactionState.ROLLBACK_MESSAGE

    producer = TransactionProducer("PG", Orders(), namesrv_addr="127.0.0.1:9876")
    await producer.start()
    result = await producer.send_message_in_transaction(Message("T", b"order 42"), arg=order)

Guarantees (RocketMQ 4.9's TransactionMQProducer):

* The message is stored as a half message first; consumers see it only
  once it is committed, and never if it is rolled back.
* `execute_local_transaction(msg, arg)` runs after the half message is
  stored (not at all when the send failed: the error is raised). Its answer
  is sent to the broker (END_TRANSACTION, oneway). An exception or a None
  answer counts as UNKNOW: the broker will ask later.
* When the broker asks (CHECK_TRANSACTION_STATE: the producer did not answer,
  answered UNKNOW, or crashed), `check_local_transaction(msg)` of any live
  producer of the same group answers, and that answer is sent back with
  fromTransactionCheck=true. A broker asks up to transactionCheckMax (15)
  times, then gives the message up.
* Listener methods may be plain functions or coroutine functions. A plain
  `execute_local_transaction` runs in the caller's task, as in Java; plain
  check methods run on `check_executor` when one is given (Java's
  setExecutorService), else on a one-thread pool, so they never stall the client.
* A transactional message cannot be delayed or sent as a batch; both are
  refused before anything is sent.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
from collections.abc import Awaitable, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, Unpack

from orbitmq.client.acl import sign_request
from orbitmq.client.config import ProducerOptions
from orbitmq.client.message import Message
from orbitmq.client.producer import Producer
from orbitmq.client.results import SendResult, SendStatus
from orbitmq.common import properties as mc
from orbitmq.common.message import Message as _AnyMessage
from orbitmq.common.message import MessageExt
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.common.sysflag import TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE, TRANSACTION_ROLLBACK_TYPE
from orbitmq.errors import ClientError, HeaderError, MessageValidationError, OrbitMQError
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.headers import CheckTransactionStateRequestHeader, EndTransactionRequestHeader

log = logging.getLogger(__name__)


class LocalTransactionState(str, enum.Enum):
    """A local transaction's outcome (RocketMQ's names, UNKNOW spelled as Java spells it)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOW = "UNKNOW"


#: commitOrRollback values of END_TRANSACTION (the sysflag transaction types).
_WIRE_STATE = {
    LocalTransactionState.COMMIT_MESSAGE: TRANSACTION_COMMIT_TYPE,
    LocalTransactionState.ROLLBACK_MESSAGE: TRANSACTION_ROLLBACK_TYPE,
    LocalTransactionState.UNKNOW: TRANSACTION_NOT_TYPE,
}

StateAnswer = LocalTransactionState | str | None


class TransactionListener(Protocol):
    """What a TransactionProducer calls; either method may be `async def`."""

    def execute_local_transaction(self, msg: Message, arg: Any) -> StateAnswer | Awaitable[StateAnswer]: ...

    def check_local_transaction(self, msg: MessageExt) -> StateAnswer | Awaitable[StateAnswer]: ...


@dataclass(frozen=True)
class TransactionSendResult(SendResult):
    """A send result plus what the local transaction answered."""

    local_transaction_state: LocalTransactionState = LocalTransactionState.UNKNOW
    transaction_id: str = ""


def _state(answer: Any) -> LocalTransactionState:
    if answer is None:
        return LocalTransactionState.UNKNOW
    try:
        return LocalTransactionState(answer)
    except ValueError:
        raise ClientError(f"a transaction listener returned {answer!r}, not a LocalTransactionState") from None


class TransactionProducer(Producer):
    """A Producer that can also send transactional messages; see the module docstring."""

    def __init__(self, group: str = "DEFAULT_PRODUCER", listener: TransactionListener | None = None, *,
                 check_executor: Executor | None = None, **options: Unpack[ProducerOptions]) -> None:
        """`check_executor` runs plain `check_local_transaction` methods (TransactionMQProducer's
        executorService); the producer never shuts it down. Without one, a one-thread pool of
        the producer's own does."""
        super().__init__(group, **options)
        self.listener = listener
        self.check_executor = check_executor
        self._check_pool: ThreadPoolExecutor | None = None
        self._checks: set[asyncio.Task[None]] = set()

    async def shutdown(self) -> None:
        for task in list(self._checks):
            task.cancel()
        if self._checks:
            await asyncio.gather(*self._checks, return_exceptions=True)
        await super().shutdown()
        if self._check_pool is not None:
            self._check_pool.shutdown(wait=False, cancel_futures=True)
            self._check_pool = None

    async def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        """Send `msg` as a half message, run the local transaction, tell the broker its outcome.

        Raises like `send` when the half message could not be stored (the
        local transaction then does not run), and `MessageValidationError`
        for a delayed message.
        """
        if self.listener is None:
            raise ClientError("TransactionListener is null: pass a listener to TransactionProducer")
        if not isinstance(msg, _AnyMessage):
            raise MessageValidationError("a transactional message is one Message, not a batch")
        if msg.delay_time_level:
            raise MessageValidationError("a transactional message cannot be delayed (delay_time_level is set)")
        msg.properties[mc.TRANSACTION_PREPARED] = "true"
        msg.properties[mc.PRODUCER_GROUP] = self.group
        result = await self.send(msg)
        error: BaseException | None = None
        if result.status is SendStatus.SEND_OK:
            msg.transaction_id = msg.unique_key
            try:
                answer = self.listener.execute_local_transaction(msg, arg)
                if inspect.isawaitable(answer):
                    answer = await answer
                state = _state(answer)
            except Exception as exc:  # the broker will ask later; the caller still gets the send result
                log.warning("local transaction of %s raised; state UNKNOW", msg.unique_key, exc_info=True)
                error, state = exc, LocalTransactionState.UNKNOW
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        await self._end(result, state, error)
        if self._tracer is not None:
            broker = self.instance.master_addr(result.message_queue.broker_name) or result.message_queue.broker_name
            self._tracer.ended(msg, result.msg_id, broker, state.value, False)
        fields = {f: getattr(result, f) for f in SendResult.__dataclass_fields__}
        return TransactionSendResult(**fields, local_transaction_state=state, transaction_id=msg.unique_key or "")

    async def _end(self, result: SendResult, state: LocalTransactionState, error: BaseException | None) -> None:
        """END_TRANSACTION (oneway) to the broker holding the half message; failures are logged only."""
        try:
            commit_log_offset = parse_offset_msg_id(result.offset_msg_id).commit_log_offset
            addr = await self.instance.find_master_addr(result.message_queue.broker_name, result.message_queue.topic)
        except (ValueError, OrbitMQError) as exc:
            log.warning("cannot end transaction %s (%s); the broker will check it", result.msg_id, exc)
            return
        fields = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=result.queue_offset,
            commit_log_offset=commit_log_offset, commit_or_rollback=_WIRE_STATE[state], from_transaction_check=False,
            msg_id=result.msg_id, transaction_id=result.msg_id, bname=result.message_queue.broker_name,
        )
        cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, fields.to_ext_fields(), oneway=True)
        if error is not None:
            cmd.remark = f"executeLocalTransactionBranch exception: {error}"
        try:
            await self.instance.remoting.invoke_oneway(addr, cmd)
        except OrbitMQError as exc:
            log.warning("END_TRANSACTION of %s to %s failed (%s); the broker will check it", result.msg_id, addr, exc)

    # --- broker checks -----------------------------------------------------------------

    def on_check(self, fields: Mapping[str, str], msg: MessageExt, peer: Peer) -> None:
        """CHECK_TRANSACTION_STATE for this group: answer in a task of our own."""
        task = asyncio.ensure_future(self._answer_check(dict(fields), msg, peer))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _answer_check(self, fields: dict[str, str], msg: MessageExt, peer: Peer) -> None:
        uniq = msg.unique_key or msg.msg_id
        try:
            check = CheckTransactionStateRequestHeader.from_ext_fields(fields)
        except HeaderError as exc:
            log.warning("CHECK_TRANSACTION_STATE of %s from %s not answered: %s", uniq, peer.addr, exc)
            return
        msg.transaction_id = check.transaction_id or uniq
        error: BaseException | None = None
        try:
            if self.listener is None:
                raise ClientError("no TransactionListener to check the transaction with")
            state = _state(await self._run_check(msg))
        except Exception as exc:  # answered UNKNOW; the broker asks again next round
            log.warning("check of transaction %s raised; answering UNKNOW", uniq, exc_info=True)
            error, state = exc, LocalTransactionState.UNKNOW
        answer = EndTransactionRequestHeader(
            producer_group=self.group, tran_state_table_offset=check.tran_state_table_offset,
            commit_log_offset=check.commit_log_offset, commit_or_rollback=_WIRE_STATE[state],
            from_transaction_check=True, msg_id=uniq, transaction_id=msg.transaction_id or uniq,
        )
        cmd = RemotingCommand.request(RequestCode.END_TRANSACTION, answer.to_ext_fields(), oneway=True)
        if error is not None:
            cmd.remark = f"checkLocalTransactionState exception: {error}"
        if self.instance.acl_credentials is not None:  # sent on the broker's connection, not our signing client
            sign_request(cmd, self.instance.acl_credentials)
        try:
            await peer.invoke_oneway(cmd)
            if self._tracer is not None:
                self._tracer.ended(msg, uniq, peer.addr, state.value, True)
        except OrbitMQError as exc:
            log.warning("answer to the check of %s not sent: %s", uniq, exc)

    async def _run_check(self, msg: MessageExt) -> Any:
        assert self.listener is not None
        check = self.listener.check_local_transaction
        if inspect.iscoroutinefunction(check):
            return await check(msg)
        executor = self.check_executor
        if executor is None:
            if self._check_pool is None:
                self._check_pool = ThreadPoolExecutor(1, thread_name_prefix="orbitmq-tx-check")
            executor = self._check_pool
        answer = await asyncio.get_running_loop().run_in_executor(executor, check, msg)
        return await answer if inspect.isawaitable(answer) else answer
