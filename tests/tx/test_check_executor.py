"""A TransactionProducer runs plain transaction checks on the executor it is given."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from orbitmq.client import LocalTransactionState, Message, MessageExt, TransactionProducer
from tests.client.helpers import create_topic, wait_until

pytestmark = pytest.mark.timeout(60)


class RecordingListener:
    def __init__(self) -> None:
        self.check_threads: list[str] = []

    def execute_local_transaction(self, msg: Message, arg: object) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        self.check_threads.append(threading.current_thread().name)
        return LocalTransactionState.COMMIT_MESSAGE


async def test_transaction_checks_run_on_the_executor_the_application_gives(
    namesrv: str, names: tuple[str, str, str]
) -> None:
    """TransactionMQProducer.setExecutorService: DefaultMQProducerImpl.checkTransactionState runs
    the listener's checkLocalTransaction on that executor (and leaves it running at shutdown)."""
    topic, pg, _ = names
    listener = RecordingListener()
    executor = ThreadPoolExecutor(2, thread_name_prefix="app-tx-check")
    try:
        async with TransactionProducer(pg, listener, check_executor=executor, namesrv_addr=namesrv) as producer:
            await create_topic(producer, topic, queues=1)
            result = await producer.send_message_in_transaction(Message(topic, b"checked"))
            assert result.local_transaction_state is LocalTransactionState.UNKNOW
            await wait_until(lambda: bool(listener.check_threads), timeout=20)
        assert listener.check_threads[0].startswith("app-tx-check")
        assert executor.submit(lambda: 42).result(timeout=5) == 42  # still the application's to stop
    finally:
        executor.shutdown(wait=False)
