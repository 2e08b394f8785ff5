"""What producers and consumers share about their lifetime: `async with` and the started instance."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Self

from orbitmq.client.config import ClientConfig
from orbitmq.client.instance import ClientInstance
from orbitmq.errors import ClientError


class ClientService(ABC):
    """Base of Producer and the consumers.

    Subclasses set `_instance` in `start()` and clear it in `shutdown()`;
    `instance` raises ClientError with `_not_started` (RocketMQ's wording)
    while there is none.
    """

    _instance: ClientInstance | None
    _not_started = "The consumer service state not OK (call start())"

    @abstractmethod
    async def start(self) -> None:
        """Connect and begin; the subclass sets `_instance`."""

    @abstractmethod
    async def shutdown(self) -> None:
        """Stop and release the instance; the subclass clears `_instance`."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    @property
    def instance(self) -> ClientInstance:
        if self._instance is None:
            raise ClientError(self._not_started)
        return self._instance

    @staticmethod
    async def join_instance(config: ClientConfig, register: Callable[[ClientInstance], None]) -> ClientInstance:
        """The shared instance of `config` with this member registered by `register`.

        When registering fails (the group is taken in this client), the use
        of the instance is given back and the error raised.
        """
        instance = await ClientInstance.acquire(config)
        try:
            register(instance)
        except ClientError:
            await instance.release()
            raise
        return instance
