"""Slave side of replication: the HA client that copies the master's CommitLog.

It connects to the master's HA address (haMasterAddress, or what the
NameServer answered at registration), reports its own CommitLog max offset,
and appends every frame the master sends at exactly that offset; the store
dispatches the appended records to ConsumeQueues and the index as it does
for local puts. After each append it reports the new max offset (the ack a
SYNC_MASTER waits for), and at least every haSendHeartbeatInterval. A
connection silent for haHousekeepingInterval, or a frame that does not
continue the log, closes the connection; the client reconnects and resumes
from its own max offset, so nothing is skipped or written twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from dataclasses import dataclass, field

from orbitmq.broker.ha.protocol import (
    CHALLENGE_SIZE,
    DataDecoder,
    MasterHello,
    SlaveHello,
    TransferDecoder,
    challenge_nonce,
    encode_ack,
    encode_proof,
    encode_report,
    encode_slave_hello,
    read_master_hello,
)
from orbitmq.errors import FrameError, OrbitMQError, StoreError
from orbitmq.remoting.listener import HANDSHAKE_TIMEOUT_S
from orbitmq.store.api import MessageStore
from orbitmq.store.epochs import EpochEntry, EpochFile, find_consistent_point

log = logging.getLogger("orbitmq.broker.ha")

#: RocketMQ's slave read buffer: the most bytes taken in one read.
READ_CHUNK = 4 << 20
#: Pause between connection attempts while the master is unreachable (s).
RECONNECT_DELAY_S = 1.0


@dataclass(frozen=True)
class SlaveSettings:
    heartbeat_interval_ms: int = 5_000
    housekeeping_interval_ms: int = 20_000
    connect_timeout_s: float = 3.0
    #: Non-empty: answer the master's HA challenge with this secret (protocol.py).
    auth_secret: str = field(default="", repr=False)
    #: TLS to the master's HA port (the broker's tls.enable), None for plain TCP.
    ssl_context: ssl.SSLContext | None = field(default=None, compare=False)


@dataclass(frozen=True)
class FollowSettings:
    """Controller mode: who this slave is and which master term it follows."""

    broker_id: int
    #: The master term this slave was told to follow; a master reporting a lower one is refused.
    epoch: int
    sync_from_last_file: bool = False
    async_learner: bool = False


class ReplicaDiverged(OrbitMQError):
    """This replica's log shares no epoch with the master's: it cannot follow without a wipe."""


def _split_addr(addr: str) -> tuple[str, int]:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(f"HA master address {addr!r} is not host:port")
    return host.strip("[]"), int(port)


class HASlave:
    """Keeps the local (slave) store a byte-identical prefix of the master's CommitLog."""

    def __init__(
        self, store: MessageStore, settings: SlaveSettings, master_ha_addr: str = "",
        follow: FollowSettings | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.master_ha_addr = master_ha_addr
        #: Controller mode (RocketMQ 5's auto-switch stream) when set.
        self.follow = follow
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        #: True while a connection to the master is open.
        self.connected = False
        #: Controller mode: the confirm offset the master last sent, capped by this store's end.
        self.confirm_offset = 0
        #: Controller mode: why replication stopped for good (the logs diverged), or "".
        self.failed = ""
        #: Controller mode: CommitLog bytes cut at the last handshake (for logs and tests).
        self.truncated_bytes = 0
        #: Why the last connection to the master ended ("" before any did).
        self.last_error = ""

    def set_master(self, ha_addr: str) -> None:
        """Use `ha_addr` from now on (reconnects when it changed)."""
        if ha_addr and ha_addr != self.master_ha_addr:
            log.info("HA master address is now %s", ha_addr)
            self.master_ha_addr = ha_addr
            self._changed.set()

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _run(self) -> None:
        while True:
            addr = self.master_ha_addr
            if not addr:
                self._changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), RECONNECT_DELAY_S)
                continue
            self._changed.clear()
            try:
                await self._replicate(addr)
            except ReplicaDiverged as exc:
                self.failed = str(exc)
                log.error("replication stopped for good: %s", exc)
                return
            except (OSError, FrameError, StoreError, TimeoutError, ValueError, asyncio.IncompleteReadError) as exc:
                self.last_error = str(exc) or type(exc).__name__
                log.warning("replication from %s stopped: %s", addr, exc)
            finally:
                self.connected = False
            if not self._changed.is_set():
                await asyncio.sleep(RECONNECT_DELAY_S)

    async def _replicate(self, addr: str) -> None:
        host, port = _split_addr(addr)
        context = self.settings.ssl_context
        if context is None:
            connecting = asyncio.open_connection(host, port, limit=READ_CHUNK)
        else:
            connecting = asyncio.open_connection(
                host, port, limit=READ_CHUNK, ssl=context, server_hostname=host,
                ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S,
            )
        reader, writer = await asyncio.wait_for(connecting, self.settings.connect_timeout_s)
        self.connected = True
        heartbeat: asyncio.Task[None] | None = None
        try:
            if self.settings.auth_secret:
                idle_s = self.settings.housekeeping_interval_ms / 1000
                try:
                    challenge = await asyncio.wait_for(reader.readexactly(CHALLENGE_SIZE), idle_s)
                except asyncio.IncompleteReadError as exc:
                    raise ConnectionError("the master closed the HA connection before its challenge") from exc
                writer.write(encode_proof(self.settings.auth_secret, challenge_nonce(challenge)))
            if self.follow is not None:
                await self._handshake(reader, writer, self.follow)
                log.info(
                    "replicating from master %s at offset %d in epoch %d", addr, self.store.get_max_phy_offset(),
                    self._epochs.last_epoch(),
                )
                heartbeat = asyncio.ensure_future(self._heartbeat(writer))
                await self._receive_epochs(reader, writer)
                return
            writer.write(encode_report(self.store.get_max_phy_offset()))
            await writer.drain()
            log.info("replicating from master %s at offset %d", addr, self.store.get_max_phy_offset())
            heartbeat = asyncio.ensure_future(self._heartbeat(writer))
            await self._receive(reader, writer)
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
                await asyncio.gather(heartbeat, return_exceptions=True)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _receive(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        store = self.store
        decoder = TransferDecoder(READ_CHUNK)
        while not self._changed.is_set():
            appended = False
            for frame in decoder.feed(await self._read(reader)):
                self._check_next(frame.offset)
                if not frame.data:
                    continue
                self._append(frame.offset, frame.data)
                appended = True
            if appended:
                writer.write(encode_report(store.get_max_phy_offset()))

    async def _read(self, reader: asyncio.StreamReader) -> bytes:
        """The master's next bytes; an idle or closed connection is an error."""
        data = await asyncio.wait_for(reader.read(READ_CHUNK), self.settings.housekeeping_interval_ms / 1000)
        if not data:
            raise ConnectionError("the master closed the HA connection")
        return data

    def _check_next(self, offset: int) -> None:
        """A frame must start where this store ends."""
        mine = self.store.get_max_phy_offset()
        # An empty slave takes whatever the master starts with (its newest file).
        if offset != mine and mine != 0:
            raise FrameError(f"master sent data for offset {offset}, this slave ends at {mine}")

    def _append(self, offset: int, data: memoryview) -> None:
        if not self.store.append_to_commit_log(offset, data):
            raise FrameError(f"the store refused replicated data at offset {offset}")

    async def _heartbeat(self, writer: asyncio.StreamWriter) -> None:
        """Report the max offset every haSendHeartbeatInterval, so the master sees us alive."""
        period = self.settings.heartbeat_interval_ms / 1000
        encode = encode_ack if self.follow is not None else encode_report
        while True:
            await asyncio.sleep(period)
            writer.write(encode(self.store.get_max_phy_offset()))
            await writer.drain()

    # --- controller mode -----------------------------------------------------------------

    @property
    def _epochs(self) -> EpochFile:
        epochs: EpochFile = getattr(self.store, "epochs")  # noqa: B009 - the file store's; Replication checks
        return epochs

    async def _handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, follow: FollowSettings) -> None:
        """Exchange epoch lists, cut this store back to where it agrees with the master, ack its end."""
        writer.write(encode_slave_hello(SlaveHello(follow.broker_id, follow.sync_from_last_file, follow.async_learner)))
        await writer.drain()
        idle_s = self.settings.housekeeping_interval_ms / 1000

        async def readexactly(n: int) -> bytes:
            return await asyncio.wait_for(reader.readexactly(n), idle_s)

        hello = await read_master_hello(readexactly)
        if hello.last_epoch < follow.epoch:
            raise FrameError(
                f"the master at this address is in epoch {hello.last_epoch}, older than epoch {follow.epoch} to follow"
            )
        self.truncated_bytes = self.truncate_to(hello)
        self._limit_reads(self.store.get_max_phy_offset())  # what is left agrees with the master
        writer.write(encode_ack(self.store.get_max_phy_offset()))
        await writer.drain()

    def _limit_reads(self, offset: int) -> None:
        """Consumers of this slave read only what the master confirmed (controller mode)."""
        limit_reads = getattr(self.store, "limit_reads", None)
        if limit_reads is not None:
            limit_reads(offset)

    def truncate_to(self, hello: MasterHello) -> int:
        """findConsistentPoint and doTruncate: cut what the master's epochs do not vouch for."""
        store = self.store
        epochs = self._epochs
        local = epochs.entries
        local_max = store.get_max_phy_offset()
        master = [EpochEntry(e, s) for e, s in hello.epochs]
        point = find_consistent_point(local, local_max, master, hello.max_offset)
        if point < 0:
            raise ReplicaDiverged(
                f"no epoch of this replica ({_show(local)}, end {local_max}) matches the master's "
                f"({_show(master)}, end {hello.max_offset}); wipe this replica's store to let it copy again"
            )
        cut = 0
        if point < local_max:
            log.warning("truncating this replica from %d to %d to match the master's epochs", local_max, point)
            truncate = getattr(store, "truncate")  # noqa: B009 - the file store's
            cut = int(truncate(point))
        epochs.truncate_from(point)
        return cut

    async def _receive_epochs(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        store = self.store
        epochs = self._epochs
        decoder = DataDecoder(READ_CHUNK)
        while not self._changed.is_set():
            appended = False
            for frame in decoder.feed(await self._read(reader)):
                self._check_next(frame.offset)
                last = epochs.last_epoch()
                if frame.epoch < last:
                    raise FrameError(f"master sent data of epoch {frame.epoch}, this slave is in epoch {last}")
                if frame.epoch > last:
                    if frame.epoch_start > frame.offset:
                        raise FrameError(f"epoch {frame.epoch} starts at {frame.epoch_start}, after its data at {frame.offset}")
                    epochs.append(frame.epoch, frame.epoch_start)
                if frame.data:
                    self._append(frame.offset, frame.data)
                    appended = True
                self.confirm_offset = min(frame.confirm_offset, store.get_max_phy_offset())
            self._limit_reads(self.confirm_offset)
            if appended:
                writer.write(encode_ack(store.get_max_phy_offset()))


def _show(entries: list[EpochEntry]) -> str:
    return ", ".join(f"epoch {e.epoch} from {e.start_offset}" for e in entries) or "no epochs"
