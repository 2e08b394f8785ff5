"""What PushConsumer, PullConsumer and LitePullConsumer share: joining, heartbeat data, offsets.

`ConsumerService.join()` is the common part of every consumer's `start()`:
check the group, join the shared client instance, register the group with
it, and set up lookups, pulling and the offset store (on the brokers when
clustering, in a local file when broadcasting), loaded before the first
pull. `leave()` is the common end of `shutdown()`. `heartbeat_data()` is the
group's entry in a HEART_BEAT; subclasses say which subscriptions it lists.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from orbitmq.client.config import ConsumerConfig, MessageModel, from_kwargs
from orbitmq.client.instance import ClientInstance
from orbitmq.client.lookups import Lookups
from orbitmq.client.offset_store import LocalFileOffsetStore, OffsetStore, RemoteOffsetStore
from orbitmq.client.producer import start_inner_producer
from orbitmq.client.pulling import BrokerOffsets, PullHelper
from orbitmq.client.queue import MessageQueue
from orbitmq.client.service import ClientService
from orbitmq.client.validation import check_group
from orbitmq.common.filter import SubscriptionData


class ConsumerService(ClientService):
    """Base of the three consumers; see the module docstring."""

    #: Java's ConsumeType: CONSUME_PASSIVELY for push consumers, CONSUME_ACTIVELY for pulling ones.
    consume_type: ClassVar[str] = "CONSUME_ACTIVELY"

    def __init__(self, group: str, options: dict[str, Any]) -> None:
        self.config: ConsumerConfig = from_kwargs(ConsumerConfig, group=group, **options)
        self.group = group
        self._instance: ClientInstance | None = None
        self._started_ms = 0

    @property
    def clustering(self) -> bool:
        return self.config.message_model is MessageModel.CLUSTERING

    async def join(self) -> ClientInstance:
        """Join the client instance as this group; lookups, pulling and a loaded offset store are ready after."""
        check_group(self.group)
        instance = await self.join_instance(self.config, lambda i: i.register_consumer(self))
        self._instance = instance
        self._started_ms = int(time.time() * 1000)
        self.lookups = Lookups(instance)
        self.pulling = PullHelper(instance, self.group, start_inner_producer)
        self.broker_offsets = BrokerOffsets(instance)
        self.offset_store: OffsetStore
        if self.clustering:
            self.offset_store = RemoteOffsetStore(self.group, self.broker_offsets)
        else:
            base = Path(self.config.offsets_dir) if self.config.offsets_dir else None
            self.offset_store = LocalFileOffsetStore(self.group, instance.client_id, base)
        await self.offset_store.load()
        return instance

    async def leave(self, instance: ClientInstance) -> None:
        """Tell the brokers the group lost this member (UNREGISTER_CLIENT) and release the instance."""
        await instance.unregister(consumer_group=self.group)
        await instance.release()

    # --- ConsumerMember (called by the client instance) ------------------------------------

    @abstractmethod
    def subscription_datas(self) -> Iterable[SubscriptionData]:
        """The subscriptions the group's heartbeat lists."""

    @abstractmethod
    def subscribed_topics(self) -> set[str]:
        """The topics whose routes the instance keeps fresh for this group."""

    @abstractmethod
    async def rebalance(self) -> None:
        """Take this member's share of the subscribed queues (nothing for a PullConsumer)."""

    @abstractmethod
    async def persist_offsets(self) -> None:
        """The instance's periodic offset persistence."""

    @abstractmethod
    async def on_offset_reset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """The broker reset the group's offsets of `topic` (RESET_CONSUMER_CLIENT_OFFSET)."""

    def heartbeat_data(self) -> dict[str, Any]:
        return {
            "consumeFromWhere": self.config.consume_from_where.value,
            "consumeType": self.consume_type,
            "groupName": self.group,
            "messageModel": self.config.message_model.value,
            "subscriptionDataSet": [sd.to_json_dict() for sd in self.subscription_datas()],
            "unitMode": False,
        }

    async def _persist(self, mqs: list[MessageQueue], oneway: bool) -> None:
        """Store the offsets of `mqs` now (on the brokers, oneway or not; or in the local file)."""
        if isinstance(self.offset_store, RemoteOffsetStore):
            await self.offset_store.persist_all(mqs, oneway=oneway)
        else:
            await self.offset_store.persist_all(mqs)
