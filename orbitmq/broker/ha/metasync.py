"""Slave metadata sync: the slave copies the master's tables every 10 s (§6.4), every
second in controller mode (docs/failover.md, "Metadata").

It asks the master (its remoting address, from the NameServer's register
answer) for GET_ALL_TOPIC_CONFIG, GET_ALL_CONSUMER_OFFSET,
GET_ALL_DELAY_OFFSET and GET_ALL_SUBSCRIPTIONGROUP_CONFIG and replaces its
own tables with them, so a consumer that falls over to the slave sees the
same topics, groups and committed offsets. Topics and groups are replaced
only when the master's data version changed. A round that fails logs and
waits for the next one; the slave keeps what it had.

`register_delay_offset` serves the master's side of GET_ALL_DELAY_OFFSET.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable
from typing import Any

from orbitmq.broker.handlers.fields import Registry
from orbitmq.broker.offsets import ConsumerOffsetTable
from orbitmq.broker.schedule import DELAY_OFFSET_FILE, ScheduleService
from orbitmq.broker.subscriptions import SubscriptionGroupTable
from orbitmq.broker.topics import TopicTable
from orbitmq.common import jsonbody
from orbitmq.errors import RemotingError
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand
from orbitmq.remoting.connection import Peer
from orbitmq.remoting.signing import AclCredentials, make_remoting_client
from orbitmq.remoting.transport import RemotingClient
from orbitmq.store.config_file import write_atomically
from orbitmq.store.paths import store_path

log = logging.getLogger("orbitmq.broker.ha")

#: RocketMQ's slave sync period (4.x, and 5.x's controller mode too).
SYNC_INTERVAL_MS = 10_000
#: Controller mode: a slave may become master at any moment, and what it has not copied is
#: lost to consumers (offsets: re-delivered messages) or producers (an unknown topic).
CONTROLLER_SYNC_INTERVAL_MS = 1_000
REQUEST_TIMEOUT_S = 3.0


def register_delay_offset(registry: Registry, schedule: Callable[[], ScheduleService | None]) -> None:
    """Serve GET_ALL_DELAY_OFFSET (the master's delayOffset.json text) on `registry`."""

    async def handle(request: RemotingCommand, peer: Peer) -> RemotingCommand:
        service = schedule()
        if service is None:
            return request.response(ResponseCode.SYSTEM_ERROR, "the schedule service is not running")
        return request.response(body=service.table.to_text())

    registry.register(RequestCode.GET_ALL_DELAY_OFFSET, handle)


class MetadataSync:
    """Periodically replaces this slave's topic, group, offset and delay tables with the master's."""

    def __init__(
        self,
        *,
        topics: TopicTable,
        groups: SubscriptionGroupTable,
        offsets: ConsumerOffsetTable,
        config_dir: str,
        topics_changed: Callable[[], None],
        groups_changed: Callable[[], None],
        offsets_changed: Callable[[], None],
        interval_ms: int = SYNC_INTERVAL_MS,
        credentials: AclCredentials | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        #: Its own connection to the master, so a slow master never delays registration;
        #: signed with the broker's own account when it has one (a master with ACL on).
        self.client: RemotingClient = make_remoting_client(credentials, ssl_context=ssl_context)
        self.topics = topics
        self.groups = groups
        self.offsets = offsets
        self.delay_path = store_path(config_dir, DELAY_OFFSET_FILE)
        self.topics_changed = topics_changed
        self.groups_changed = groups_changed
        self.offsets_changed = offsets_changed
        self.interval_ms = interval_ms
        #: The master's remoting address (`ip:port`); empty until registration names it.
        self.master_addr = ""
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()

    def set_master(self, addr: str) -> None:
        """Sync from `addr` from now on; a new master is synced at once."""
        if addr and addr != self.master_addr:
            self.master_addr = addr
            self._changed.set()

    def sync_soon(self) -> None:
        """Run a round now rather than at the next interval (a change was noticed)."""
        self._changed.set()

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        """End the sync rounds; `start()` may run them again (the connection stays usable)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def close(self) -> None:
        await self.stop()
        await self.client.close()

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._changed.wait(), self.interval_ms / 1000)
            except TimeoutError:
                pass
            self._changed.clear()
            if not self.master_addr:
                continue
            try:
                await self.sync_once()
            except (RemotingError, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
                log.warning("metadata sync from master %s failed: %s", self.master_addr, exc)

    async def _fetch(self, code: int) -> Any:
        response = await self.client.invoke(self.master_addr, RemotingCommand.request(code), REQUEST_TIMEOUT_S)
        if response.code != ResponseCode.SUCCESS:
            raise ValueError(f"master answered request {code} with {response.code} {response.remark}")
        return response.body_bytes()

    async def sync_once(self) -> None:
        """One round: topics, consumer offsets, delay offsets, subscription groups."""
        topics = jsonbody.loads(await self._fetch(RequestCode.GET_ALL_TOPIC_CONFIG))
        if not isinstance(topics, dict):
            raise TypeError("the master's topic table is not a JSON object")
        if topics.get("dataVersion") != self.topics.data_version.to_json():
            self.topics.load_json(topics)
            self.topics_changed()

        offsets = jsonbody.loads(await self._fetch(RequestCode.GET_ALL_CONSUMER_OFFSET))
        if not isinstance(offsets, dict):
            raise TypeError("the master's consumer offsets are not a JSON object")
        self.offsets.load_json(offsets)
        self.offsets_changed()

        delay = await self._fetch(RequestCode.GET_ALL_DELAY_OFFSET)
        if delay:
            jsonbody.loads(delay)  # refuse to store what is not JSON
            await asyncio.to_thread(write_atomically, self.delay_path, delay)

        groups = jsonbody.loads(await self._fetch(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
        if not isinstance(groups, dict):
            raise TypeError("the master's subscription groups are not a JSON object")
        if groups.get("dataVersion") != self.groups.data_version.to_json():
            self.groups.load_json(groups)
            self.groups_changed()
