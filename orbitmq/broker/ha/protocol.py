"""The HA stream between a master and its slave, as RocketMQ 4.x speaks it (sans-IO).

This is a plain TCP stream on the master's HA port, not remoting frames.

Slave -> master: reports, each one big-endian long:

    REPORT = ">q"   # the slave's CommitLog max offset (first: where to start; later: acks)

Master -> slave: transfer frames, header then data:

    TRANSFER_HEADER = (
        ">q"    # CommitLog offset where the data starts
        "i"     # data size N; 0 is a heartbeat naming the next offset
    )           # followed by N raw CommitLog bytes

With HA authentication on (an OrbitMQ addition; broker key haSecret), the
master first sends a challenge and the slave answers with a proof before
its first report; a slave that cannot prove it holds the secret is
disconnected before any CommitLog byte leaves the master:

    CHALLENGE = b"OMQHA1" + 16 random bytes                 master -> slave
    PROOF     = HMAC-SHA256(secret, b"orbitmq-ha-auth\n" + nonce)   slave -> master (32 bytes)

Nothing here touches a socket or a clock: bytes go in, values come out.
Bad input raises FrameError; the caller closes the connection.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from orbitmq.errors import FrameError

REPORT = struct.Struct(">q")
TRANSFER_HEADER = struct.Struct(
    ">q"  # start offset
    "i"  # data size
)

#: RocketMQ's haTransferBatchSize: most data bytes in one transfer frame.
DEFAULT_TRANSFER_BATCH = 32 * 1024


AUTH_MAGIC = b"OMQHA1"
NONCE_SIZE = 16
CHALLENGE_SIZE = len(AUTH_MAGIC) + NONCE_SIZE
PROOF_SIZE = hashlib.sha256().digest_size
_PROOF_CONTEXT = b"orbitmq-ha-auth\n"


def encode_challenge(nonce: bytes) -> bytes:
    if len(nonce) != NONCE_SIZE:
        raise ValueError(f"an HA challenge nonce is {NONCE_SIZE} bytes, not {len(nonce)}")
    return AUTH_MAGIC + nonce


def challenge_nonce(data: bytes) -> bytes:
    """The nonce of a master's challenge; FrameError when `data` is not one."""
    if len(data) != CHALLENGE_SIZE or not data.startswith(AUTH_MAGIC):
        raise FrameError("the master did not send an HA authentication challenge (is haSecret set on both?)")
    return data[len(AUTH_MAGIC):]


def encode_proof(secret: str, nonce: bytes) -> bytes:
    """The slave's answer: it holds `secret`."""
    return hmac.new(secret.encode("utf-8"), _PROOF_CONTEXT + nonce, hashlib.sha256).digest()


def proof_ok(secret: str, nonce: bytes, proof: bytes) -> bool:
    return hmac.compare_digest(encode_proof(secret, nonce), proof)


def encode_report(max_offset: int) -> bytes:
    """The 8 bytes a slave sends to report (or acknowledge up to) `max_offset`."""
    if max_offset < 0:
        raise ValueError(f"a reported offset cannot be negative: {max_offset}")
    return REPORT.pack(max_offset)


def encode_transfer_header(offset: int, size: int) -> bytes:
    """The 12-byte frame header; `size` 0 makes a heartbeat."""
    return TRANSFER_HEADER.pack(offset, size)


def start_offset(first_report: int, master_max_offset: int, file_size: int) -> int:
    """Where the master starts sending after a slave's first report.

    A slave with no data (report 0) gets the master's newest CommitLog file from its
    beginning, not the whole history; any other report is continued as is.
    """
    if first_report == 0:
        return master_max_offset - master_max_offset % file_size
    return first_report


class _NewestOffsetDecoder(ABC):
    """A stream of fixed-size units, each carrying an offset: gives the newest one.

    Only whole units count; when one read holds several, the last one wins (the
    earlier ones are older acks). A partial unit waits for its rest.
    """

    unit: struct.Struct

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> int | None:
        """The newest complete unit's offset in `data` (with what was left over), or None."""
        buf = self._pending + data if self._pending else data
        whole = len(buf) - len(buf) % self.unit.size
        self._pending = bytes(buf[whole:])
        if whole == 0:
            return None
        return self._offset(buf, whole)

    @abstractmethod
    def _offset(self, buf: bytes, whole: int) -> int:
        """The offset of the last of the units in `buf[:whole]`; raises FrameError for a bad one."""


class ReportDecoder(_NewestOffsetDecoder):
    """Master side: turns the slave's byte stream into reported offsets (8-byte units)."""

    unit = REPORT

    def _offset(self, buf: bytes, whole: int) -> int:
        (offset,) = REPORT.unpack_from(buf, whole - REPORT.size)
        if offset < 0:
            raise FrameError(f"HA report holds a negative offset {offset}")
        return int(offset)


@dataclass(frozen=True, slots=True)
class TransferFrame:
    """One master frame: `data` (possibly empty: a heartbeat) starts at CommitLog `offset`."""

    offset: int
    data: memoryview


F = TypeVar("F")


class _FrameDecoder(ABC, Generic[F]):
    """A byte stream as frames of a fixed header and a data part whose size the header gives.

    The bytes of one `feed` are kept as one buffer and frames are views into
    it, so a frame's data is never copied here; the caller appends it before
    the next `feed`. A frame cut by the end of a read waits for its rest.
    """

    header: struct.Struct

    def __init__(self, max_frame_data: int) -> None:
        #: Largest data size accepted in one frame; a bigger one means a broken stream.
        self.max_frame_data = max_frame_data
        self._buf = bytearray()

    @abstractmethod
    def _data_size(self, fields: tuple[Any, ...]) -> int:
        """The data size the header `fields` announce; raises FrameError for a broken header."""

    @abstractmethod
    def _frame(self, fields: tuple[Any, ...], data: memoryview) -> F:
        """The frame of header `fields` and its `data`."""

    def feed(self, data: bytes) -> list[F]:
        if self._buf:
            self._buf += data
            buf: bytes | bytearray = bytes(self._buf)
            self._buf.clear()
        else:
            buf = data
        view = memoryview(buf)
        frames: list[F] = []
        pos = 0
        end = len(buf)
        head = self.header.size
        while end - pos >= head:
            fields = self.header.unpack_from(buf, pos)
            size = self._data_size(fields)
            if end - pos - head < size:
                break
            frames.append(self._frame(fields, view[pos + head : pos + head + size]))
            pos += head + size
        if pos < end:
            self._buf += view[pos:]
        return frames


class TransferDecoder(_FrameDecoder[TransferFrame]):
    """Slave side: turns the master's byte stream into transfer frames."""

    header = TRANSFER_HEADER

    def _data_size(self, fields: tuple[Any, ...]) -> int:
        offset, size = fields
        if size < 0 or size > self.max_frame_data or offset < 0:
            raise FrameError(f"HA transfer frame header is invalid: offset {offset}, size {size}")
        return int(size)

    def _frame(self, fields: tuple[Any, ...], data: memoryview) -> TransferFrame:
        return TransferFrame(fields[0], data)


# --- controller mode (RocketMQ 5's auto-switch HA stream) ---------------------------------
#
# Used only when both sides run in controller mode (failover on); the 4.x stream above is
# unchanged otherwise. Every frame starts with the connection state (HANDSHAKE 1, TRANSFER 2):
#
#   slave -> master handshake (16 B):  >i state=1, >h isSyncFromLastFile, >h isAsyncLearner, >q slaveBrokerId
#   master -> slave handshake:         >i state=1, >i bodySize (12 x N), >q master max offset,
#                                      >i master last epoch; then N x (>i epoch, >q start offset)
#   master -> slave data:              >i state=2, >i bodySize, >q batch start offset, >i epoch,
#                                      >q epoch start offset, >q confirm offset; then bodySize bytes
#                                      (0: a heartbeat). A batch never spans two epochs.
#   slave -> master ack (12 B):        >i state=2, >q slave max offset

STATE_HANDSHAKE = 1
STATE_TRANSFER = 2
SLAVE_HANDSHAKE = struct.Struct(">ihhq")
MASTER_HANDSHAKE = struct.Struct(">iiqi")
EPOCH_ENTRY = struct.Struct(">iq")
DATA_HEADER = struct.Struct(">iiqiqq")
ACK = struct.Struct(">iq")
#: Most epoch entries a master handshake carries (RocketMQ's limit).
MAX_HANDSHAKE_EPOCHS = 1000


@dataclass(frozen=True, slots=True)
class SlaveHello:
    broker_id: int
    sync_from_last_file: bool = False
    async_learner: bool = False


@dataclass(frozen=True, slots=True)
class MasterHello:
    max_offset: int
    last_epoch: int
    epochs: tuple[tuple[int, int], ...]


@dataclass(frozen=True, slots=True)
class DataFrame:
    offset: int
    epoch: int
    epoch_start: int
    confirm_offset: int
    data: memoryview


def encode_slave_hello(hello: SlaveHello) -> bytes:
    return SLAVE_HANDSHAKE.pack(STATE_HANDSHAKE, int(hello.sync_from_last_file), int(hello.async_learner), hello.broker_id)


def decode_slave_hello(data: bytes) -> SlaveHello:
    state, last_file, learner, broker_id = SLAVE_HANDSHAKE.unpack(data)
    if state != STATE_HANDSHAKE:
        raise FrameError(f"expected the slave's HA handshake (state 1), got state {state}")
    if broker_id < 0:
        raise FrameError(f"the slave's HA handshake names broker id {broker_id}")
    return SlaveHello(broker_id, bool(last_file), bool(learner))


def encode_master_hello(max_offset: int, epochs: list[tuple[int, int]]) -> bytes:
    epochs = epochs[-MAX_HANDSHAKE_EPOCHS:]
    last_epoch = epochs[-1][0] if epochs else 0
    body = b"".join(EPOCH_ENTRY.pack(e, s) for e, s in epochs)
    return MASTER_HANDSHAKE.pack(STATE_HANDSHAKE, len(body), max_offset, last_epoch) + body


async def read_master_hello(readexactly: Callable[[int], Awaitable[bytes]]) -> MasterHello:
    state, size, max_offset, last_epoch = MASTER_HANDSHAKE.unpack(await readexactly(MASTER_HANDSHAKE.size))
    if state != STATE_HANDSHAKE:
        raise FrameError(f"expected the master's HA handshake (state 1), got state {state}")
    if size < 0 or size % EPOCH_ENTRY.size or size > MAX_HANDSHAKE_EPOCHS * EPOCH_ENTRY.size or max_offset < 0:
        raise FrameError(f"the master's HA handshake is invalid: body {size} bytes, max offset {max_offset}")
    body = await readexactly(size) if size else b""
    epochs = tuple((int(e), int(s)) for e, s in EPOCH_ENTRY.iter_unpack(body))
    return MasterHello(max_offset, last_epoch, epochs)


def encode_data_header(offset: int, size: int, epoch: int, epoch_start: int, confirm_offset: int) -> bytes:
    return DATA_HEADER.pack(STATE_TRANSFER, size, offset, epoch, epoch_start, confirm_offset)


def encode_ack(max_offset: int) -> bytes:
    if max_offset < 0:
        raise ValueError(f"an acknowledged offset cannot be negative: {max_offset}")
    return ACK.pack(STATE_TRANSFER, max_offset)


class AckDecoder(_NewestOffsetDecoder):
    """Master side, controller mode: the newest complete 12-byte ack in the stream."""

    unit = ACK

    def _offset(self, buf: bytes, whole: int) -> int:
        for state, _ in ACK.iter_unpack(buf[:whole]):
            if state != STATE_TRANSFER:
                raise FrameError(f"expected a slave's HA ack (state 2), got state {state}")
        _, offset = ACK.unpack_from(buf, whole - ACK.size)
        if offset < 0:
            raise FrameError(f"HA ack holds a negative offset {offset}")
        return int(offset)


class DataDecoder(_FrameDecoder[DataFrame]):
    """Slave side, controller mode: the master's byte stream as data frames (views, not copies)."""

    header = DATA_HEADER

    def _data_size(self, fields: tuple[Any, ...]) -> int:
        state, size, offset, epoch, epoch_start, _ = fields
        if state != STATE_TRANSFER:
            raise FrameError(f"expected an HA data frame (state 2), got state {state}")
        if size < 0 or size > self.max_frame_data or offset < 0 or epoch_start < 0 or epoch < 0:
            raise FrameError(f"HA data frame header is invalid: offset {offset}, size {size}, epoch {epoch}")
        return int(size)

    def _frame(self, fields: tuple[Any, ...], data: memoryview) -> DataFrame:
        _, _, offset, epoch, epoch_start, confirm = fields
        return DataFrame(offset, epoch, epoch_start, confirm, data)
