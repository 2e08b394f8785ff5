"""Master side of replication: the HA listener that streams the CommitLog to slaves.

Each slave connection has two halves. The reader takes the slave's 8-byte
reports: the first names where to start, later ones acknowledge what the
slave holds (they feed `AckWaiters`, which SYNC_MASTER sends wait on). The
pusher sends the CommitLog from the start position in frames of at most
haTransferBatchSize bytes, straight from the mapped files, and a heartbeat
frame when nothing was sent for haSendHeartbeatInterval. A connection that
is silent for haHousekeepingInterval, or breaks the protocol, is closed; the
slave reconnects and resumes from its own max offset. The port speaks TLS
as tls.server.mode says (remoting/listener.py), like the broker's other ports.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from orbitmq.broker.ha.acks import AckWaiters
from orbitmq.broker.ha.insync import InSyncSet, ReplicaState, enough_replicas, required_offset
from orbitmq.broker.ha.protocol import (
    NONCE_SIZE,
    PROOF_SIZE,
    SLAVE_HANDSHAKE,
    AckDecoder,
    ReportDecoder,
    decode_slave_hello,
    encode_challenge,
    encode_data_header,
    encode_master_hello,
    encode_transfer_header,
    proof_ok,
    start_offset,
)
from orbitmq.errors import FrameError
from orbitmq.remoting.listener import Listener, listen
from orbitmq.remoting.tls import ServerTls
from orbitmq.store.api import MessageStore, PutMessageStatus
from orbitmq.store.epochs import EpochEntry, EpochFile

log = logging.getLogger("orbitmq.broker.ha")

#: RocketMQ's master read buffer: the most report bytes taken in one read.
READ_CHUNK = 1 << 20
#: Bytes queued on a connection before the pusher waits for the socket to drain.
HIGH_WATER = 1 << 20


@dataclass(frozen=True)
class MasterSettings:
    """The HA settings of a master (from the store part of broker.conf)."""

    host: str
    port: int
    transfer_batch_size: int = 32 * 1024
    heartbeat_interval_ms: int = 5_000
    housekeeping_interval_ms: int = 20_000
    slave_fallbehind_max: int = 256 * 1024 * 1024
    commit_log_file_size: int = 1 << 30
    #: Non-empty: a slave must answer the HA challenge with this secret (protocol.py).
    auth_secret: str = field(default="", repr=False)
    tls: ServerTls | None = field(default=None, compare=False)
    #: Controller mode: speak RocketMQ 5's auto-switch stream (epochs, confirm offset).
    controller_mode: bool = False
    #: allAckInSyncStateSet: a put waits for every member of the in-sync set.
    all_ack: bool = False
    #: inSyncReplicas: copies (master included) a put waits for when not allAck.
    in_sync_replicas: int = 1
    #: minInSyncReplicas: fewer in-sync copies than this refuse puts (controller mode).
    min_in_sync_replicas: int = 1


class HAMaster:
    """Serves slaves on the HA port and tracks what they acknowledged.

    Guarantees: bytes are sent in CommitLog order without gaps from the start
    position; `acks.acked` only grows and never exceeds this store's max offset.
    """

    def __init__(
        self, store: MessageStore, settings: MasterSettings, *, in_sync: InSyncSet | None = None,
        epochs: EpochFile | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.acks = AckWaiters()
        #: The slaves whose acks count; coordination sets it (insync.py).
        self.in_sync = in_sync if in_sync is not None else InSyncSet()
        self.in_sync.on_change(self._recompute)
        #: This store's master terms (controller mode); the handshake sends them.
        self.epochs = epochs
        if settings.controller_mode and epochs is None:
            raise ValueError("controller mode needs the store's epoch file")
        #: Per slave (broker id; 4.x slaves get negative stand-ins) what it acknowledged.
        self.replicas: dict[int, ReplicaState] = {}
        self._next_anonymous = -1
        self._server: Listener | None = None
        self._wakers: set[asyncio.Event] = set()
        self._handlers: set[asyncio.Task[None]] = set()
        #: Open slave connections (RocketMQ's connectionCount).
        self.connections = 0
        self.address: tuple[str, int] | None = None

    async def start(self) -> tuple[str, int]:
        """Listen on the HA port; returns the bound (host, port), port 0 resolved."""
        self.store.add_dispatch_listener(self.notify)
        if self.settings.controller_mode:
            # A new master's whole log counts as confirmed (RocketMQ 5: confirm offset := max offset).
            self.acks.ack(self.store.get_max_phy_offset())
            self._apply_visibility()
        loop = asyncio.get_running_loop()

        def protocol() -> asyncio.StreamReaderProtocol:  # what asyncio.start_server builds per connection
            return asyncio.StreamReaderProtocol(asyncio.StreamReader(READ_CHUNK, loop), self._serve_quietly, loop=loop)

        self._server = await listen(protocol, self.settings.host, self.settings.port, tls=self.settings.tls)
        sock = self._server.sockets[0].getsockname()
        self.address = (str(sock[0]), int(sock[1]))
        return self.address

    async def close(self) -> None:
        self.in_sync.remove_listener(self._recompute)
        limit_reads = getattr(self.store, "limit_reads", None)
        if limit_reads is not None and self.settings.controller_mode:
            limit_reads(None)
        self.acks.close()
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    def notify(self, topic: str, queue_id: int, max_offset: int) -> None:
        """Store dispatch listener: new CommitLog bytes; wake idle pushers."""
        for event in self._wakers:
            event.set()

    # --- SYNC_MASTER ----------------------------------------------------------------

    @property
    def _custom_rule(self) -> bool:
        """Acks follow insync.required_offset instead of RocketMQ 4.x's "any one slave"."""
        s = self.settings
        return s.controller_mode or s.all_ack or s.in_sync_replicas > 1

    def required_offset(self) -> int:
        """How far the CommitLog is held by the copies a put needs (insync.py)."""
        s = self.settings
        return required_offset(
            self.replicas.values(), self.in_sync.members, self.store.get_max_phy_offset(),
            controller_mode=s.controller_mode, all_ack=s.all_ack, in_sync_replicas=s.in_sync_replicas,
        )

    @property
    def confirm_offset(self) -> int:
        """The group's confirm offset: with allAck the smallest ack of the in-sync set (the
        master's own end when the set is empty), else the master's max offset (RocketMQ 5)."""
        max_offset = self.store.get_max_phy_offset()
        if not (self.settings.controller_mode and self.settings.all_ack) or not self.in_sync.members:
            return max_offset
        return min(self.acks.acked, max_offset)

    def _recompute(self) -> None:
        if self._custom_rule:
            self.acks.ack(self.required_offset())
            self._apply_visibility()

    def _apply_visibility(self) -> None:
        """Controller mode with allAck and an in-sync set: consumers read up to the confirm offset."""
        limit_reads = getattr(self.store, "limit_reads", None)
        if limit_reads is None or not (self.settings.controller_mode and self.settings.all_ack):
            return
        limit_reads(self.confirm_offset if self.in_sync.members else None)

    def enough_replicas(self) -> bool:
        """minInSyncReplicas holds (always true outside controller mode)."""
        s = self.settings
        return enough_replicas(
            self.replicas.values(), self.in_sync.members, controller_mode=s.controller_mode,
            min_in_sync_replicas=s.min_in_sync_replicas,
        )

    def slave_ok(self) -> bool:
        """A slave is connected and lags by less than haSlaveFallbehindMax."""
        if self.connections <= 0:
            return False
        return self.store.get_max_phy_offset() - self.acks.acked < self.settings.slave_fallbehind_max

    async def wait_for_slave(self, end_offset: int, timeout_s: float) -> PutMessageStatus:
        """PUT_OK once a slave holds every byte below `end_offset`; SLAVE_NOT_AVAILABLE when
        no slave is usable; FLUSH_SLAVE_TIMEOUT when the ack does not come in time.
        minInSyncReplicas is not checked here: the put is stored already, so it was checked
        before the append (`Replication.put_refusal`)."""
        if self.settings.controller_mode:
            self._recompute()
            if self.acks.acked >= end_offset:
                return PutMessageStatus.PUT_OK
            if await self.acks.wait(end_offset, timeout_s):
                return PutMessageStatus.PUT_OK
            return PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        if self.acks.acked >= end_offset:
            return PutMessageStatus.PUT_OK
        if not self.slave_ok():
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        if await self.acks.wait(end_offset, timeout_s):
            return PutMessageStatus.PUT_OK
        return PutMessageStatus.FLUSH_SLAVE_TIMEOUT

    # --- connections -------------------------------------------------------------------

    async def _serve_quietly(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """`_serve`, ending normally when close() cancels it: asyncio's stream callback asks a
        finished connection task for its exception and would log a cancelled one as an error
        with a CancelledError traceback."""
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            if self._server is not None:  # not closing: someone else's cancellation, pass it on
                raise
            log.info("HA connection of slave %s closed: the master stops", writer.get_extra_info("peername"))

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        peer = writer.get_extra_info("peername")
        counted = False
        try:
            await self._authenticate(reader, writer)
            self.connections += 1
            counted = True
            log.info("slave %s connected to the HA port", peer)
            if self.settings.controller_mode:
                await self._converse_controller(reader, writer, str(peer))
            else:
                await self._converse(reader, writer, str(peer))
        except (FrameError, ConnectionError, TimeoutError) as exc:
            log.warning("HA connection of slave %s closed: %s", peer, exc)
        finally:
            if counted:
                self.connections -= 1
            self._handlers.discard(task)
            # Drop unsent frames at once: they may still point into mapped CommitLog files,
            # and the slave resumes from its own offset anyway.
            writer.transport.abort()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _authenticate(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """With a secret: challenge the slave and refuse it unless its proof matches."""
        secret = self.settings.auth_secret
        if not secret:
            return
        nonce = os.urandom(NONCE_SIZE)
        writer.write(encode_challenge(nonce))
        await writer.drain()
        idle_s = self.settings.housekeeping_interval_ms / 1000
        try:
            proof = await asyncio.wait_for(reader.readexactly(PROOF_SIZE), idle_s)
        except asyncio.IncompleteReadError:
            raise FrameError("the slave failed HA authentication: it closed the connection without a proof") from None
        if not proof_ok(secret, nonce, proof):
            raise FrameError("the slave failed HA authentication (wrong or missing haSecret)")

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str = "") -> None:
        # A 4.x slave names no broker id: it is tracked under a negative stand-in while connected.
        state = ReplicaState(self._next_anonymous, peer)
        self._next_anonymous -= 1
        self.replicas[state.broker_id] = state
        try:
            await self._converse_4x(reader, writer, state)
        finally:
            del self.replicas[state.broker_id]
            if self._custom_rule:
                self._recompute()

    async def _converse_4x(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, state: ReplicaState) -> None:
        settings = self.settings
        decoder = ReportDecoder()
        first = await self._first_offset(reader, decoder, "slave")
        if first is None:
            return
        master_max = self.store.get_max_phy_offset()
        begin = start_offset(first, master_max, settings.commit_log_file_size)
        oldest = self.store.get_min_phy_offset()
        if begin < oldest:
            raise FrameError(f"slave needs offset {begin}, but the oldest CommitLog byte kept is at {oldest}")
        self._ack(first, state)
        await self._pump(reader, writer, decoder, state, self._push(writer, begin), "slave")

    async def _first_offset(
        self, reader: asyncio.StreamReader, decoder: ReportDecoder | AckDecoder, who: str
    ) -> int | None:
        """The slave's first reported offset; None when it closes the connection first."""
        idle_s = self.settings.housekeeping_interval_ms / 1000
        first: int | None = None
        while first is None:
            data = await asyncio.wait_for(reader.read(READ_CHUNK), idle_s)
            if not data:
                return None
            first = decoder.feed(data)
        master_max = self.store.get_max_phy_offset()
        if first > master_max:
            raise FrameError(f"{who} reports offset {first}, past this master's end {master_max}")
        return first

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        decoder: ReportDecoder | AckDecoder,
        state: ReplicaState,
        push: Coroutine[Any, Any, None],
        who: str,
    ) -> None:
        """Run `push` while reading the slave's acknowledgements until either side stops."""
        idle_s = self.settings.housekeeping_interval_ms / 1000
        pusher = asyncio.ensure_future(push)

        # A pusher that fails (socket error) ends the read below at once, not at the next report.
        def on_pusher_done(task: asyncio.Future[None]) -> None:
            if not task.cancelled() and task.exception() is not None:
                writer.transport.abort()

        pusher.add_done_callback(on_pusher_done)
        try:
            while not pusher.done():
                data = await asyncio.wait_for(reader.read(READ_CHUNK), idle_s)
                if not data:
                    return
                offset = decoder.feed(data)
                if offset is not None:
                    if offset > self.store.get_max_phy_offset():
                        raise FrameError(f"{who} acknowledges offset {offset}, past this master's end")
                    self._ack(offset, state)
            pusher.result()  # surfaces why the pusher stopped
        finally:
            pusher.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionError):
                await pusher

    def _ack(self, offset: int, state: ReplicaState) -> None:
        state.acked = max(state.acked, offset)
        if offset >= self.store.get_max_phy_offset():
            state.caught_up_at = asyncio.get_running_loop().time()
        if self._custom_rule:
            self._recompute()
        else:
            self.acks.ack(offset)  # RocketMQ 4.x: any one slave

    # --- controller mode -----------------------------------------------------------------

    async def _converse_controller(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, peer: str) -> None:
        """RocketMQ 5's auto-switch stream: handshakes with the epoch list, then epoch-tagged batches."""
        settings = self.settings
        idle_s = settings.housekeeping_interval_ms / 1000
        try:
            raw = await asyncio.wait_for(reader.readexactly(SLAVE_HANDSHAKE.size), idle_s)
        except asyncio.IncompleteReadError:
            return
        hello = decode_slave_hello(raw)
        assert self.epochs is not None
        entries = self.epochs.entries
        writer.write(encode_master_hello(self.store.get_max_phy_offset(), [(e.epoch, e.start_offset) for e in entries]))
        await writer.drain()
        decoder = AckDecoder()
        first = await self._first_offset(reader, decoder, f"slave {hello.broker_id}")
        if first is None:
            return
        master_max = self.store.get_max_phy_offset()
        oldest = self.store.get_min_phy_offset()
        if first:
            begin = first
        elif hello.sync_from_last_file:
            begin = master_max - master_max % settings.commit_log_file_size
        else:
            begin = oldest
        if begin < oldest:
            raise FrameError(f"slave needs offset {begin}, but the oldest CommitLog byte kept is at {oldest}")
        state = ReplicaState(hello.broker_id, peer, learner=hello.async_learner)
        old = self.replicas.get(hello.broker_id)
        if old is not None:
            state.caught_up_at = old.caught_up_at
        self.replicas[hello.broker_id] = state
        self._ack(first, state)
        log.info("slave %d (%s) replicates from offset %d in controller mode", hello.broker_id, peer, begin)
        try:
            await self._pump(reader, writer, decoder, state, self._push(writer, begin, entries), f"slave {hello.broker_id}")
        finally:
            if self.replicas.get(hello.broker_id) is state:
                state.connected = False
                self._recompute()

    def _epoch_of(self, offset: int, entries: list[EpochEntry]) -> tuple[int, int, int]:
        """(epoch, its start, where the next epoch starts or -1) for CommitLog `offset`."""
        epoch, start, end = 0, 0, -1
        for i, e in enumerate(entries):
            if e.start_offset <= offset:
                epoch, start = e.epoch, e.start_offset
                end = entries[i + 1].start_offset if i + 1 < len(entries) else -1
            else:
                if epoch == 0:
                    end = e.start_offset
                break
        return epoch, start, end

    async def _push(self, writer: asyncio.StreamWriter, offset: int, entries: list[EpochEntry] | None = None) -> None:
        """Send the CommitLog from `offset` on, forever; heartbeats while idle. With `entries`
        (controller mode) frames carry epoch and confirm offset and never span two epochs."""
        settings = self.settings
        batch = settings.transfer_batch_size
        heartbeat_s = settings.heartbeat_interval_ms / 1000
        loop = asyncio.get_running_loop()
        wake = asyncio.Event()
        self._wakers.add(wake)
        last_write = loop.time()
        try:
            while True:
                wake.clear()
                sent = 0
                while sent < HIGH_WATER:
                    chunk = self.store.get_commit_log_data(offset)
                    if chunk is None:
                        break
                    try:
                        view = chunk.buffer
                        n = len(view)
                        pos = 0
                        while pos < n and sent < HIGH_WATER:
                            size = min(batch, n - pos)
                            if entries is not None:
                                if self.epochs is not None and len(self.epochs.entries) != len(entries):
                                    raise ConnectionError("this master's epochs changed; the slave must handshake again")
                                epoch, epoch_start, epoch_end = self._epoch_of(offset, entries)
                                if epoch_end > offset:
                                    size = min(size, epoch_end - offset)
                                writer.write(encode_data_header(offset, size, epoch, epoch_start, self.confirm_offset))
                            else:
                                writer.write(encode_transfer_header(offset, size))
                            writer.write(view[pos : pos + size])
                            pos += size
                            offset += size
                            sent += size
                    finally:
                        chunk.release()  # the transport copied what it did not send at once
                if sent:
                    last_write = loop.time()
                    await writer.drain()
                    continue
                if loop.time() - last_write >= heartbeat_s:
                    if entries is not None:
                        epoch, epoch_start, _ = self._epoch_of(offset, entries)
                        writer.write(encode_data_header(offset, 0, epoch, epoch_start, self.confirm_offset))
                    else:
                        writer.write(encode_transfer_header(offset, 0))
                    last_write = loop.time()
                    await writer.drain()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), max(heartbeat_s - (loop.time() - last_write), 0.01))
        finally:
            self._wakers.discard(wake)
