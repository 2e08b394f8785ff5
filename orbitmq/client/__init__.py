"""OrbitMQ's Python client: asyncio producers and consumers that speak RocketMQ 4.x.

    from orbitmq.client import Producer, PushConsumer, Message, ConsumeResult

The classes here are asyncio-first; `orbitmq.client.sync` has blocking twins
for code that is not asyncio. They work against OrbitMQ and against Apache
RocketMQ 4.x brokers alike.
"""

from orbitmq.client.allocate import (
    Averagely,
    AveragelyByCircle,
    ByConfig,
    ByMachineRoom,
    ConsistentHash,
    QueueAllocator,
)
from orbitmq.client.batch import split_batches
from orbitmq.client.config import ConsumeFromWhere, MessageModel
from orbitmq.client.consume_context import ConsumeConcurrentlyContext, ConsumeOrderlyContext
from orbitmq.client.lite_pull_consumer import LitePullConsumer
from orbitmq.client.message import Message, MessageExt
from orbitmq.client.message_selector import MessageSelector
from orbitmq.client.producer import Producer
from orbitmq.client.pull_consumer import PullConsumer
from orbitmq.client.push_consumer import PushConsumer
from orbitmq.client.queue import MessageQueue
from orbitmq.client.request_reply import RequestReplyTimeout, create_reply_message
from orbitmq.client.results import (
    ConsumeOrderlyResult,
    ConsumeResult,
    PullResult,
    PullStatus,
    SendResult,
    SendStatus,
)
from orbitmq.client.selector import hash_selector, machine_room_selector, random_selector
from orbitmq.client.transaction_producer import (
    LocalTransactionState,
    TransactionListener,
    TransactionProducer,
    TransactionSendResult,
)

__all__ = [
    "Averagely",
    "AveragelyByCircle",
    "ByConfig",
    "ByMachineRoom",
    "ConsistentHash",
    "ConsumeConcurrentlyContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeOrderlyResult",
    "ConsumeResult",
    "LitePullConsumer",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "MessageSelector",
    "Producer",
    "PullConsumer",
    "PullResult",
    "PullStatus",
    "PushConsumer",
    "QueueAllocator",
    "RequestReplyTimeout",
    "SendResult",
    "SendStatus",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "create_reply_message",
    "hash_selector",
    "machine_room_selector",
    "random_selector",
    "split_batches",
]
