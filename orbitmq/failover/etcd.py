"""The thin async shell over etcd (aetcd, gRPC): one broker group's keys, read and CAS-written.

Every call is bounded by a timeout and raises `EtcdUnavailable` on any failure; the
caller decides what a failure means (a master's lease clock runs out on its own). With
several endpoints, a failure moves the next call to the next endpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from orbitmq.errors import ConfigError
from orbitmq.failover.model import GroupState, Handover, LiveReport, MasterClaim, group_prefix

log = logging.getLogger("orbitmq.failover")

class EtcdUnavailable(Exception):
    """etcd did not answer in time, or refused the call."""


class LeaseGone(EtcdUnavailable):
    """etcd no longer knows the lease the call named (it expired): grant a new one."""


def _aetcd() -> Any:
    try:
        import aetcd
    except ImportError:
        raise ConfigError(
            "enableControllerMode=true needs the aetcd package (pip install 'orbitmq[failover]')"
        ) from None
    return aetcd


def _split(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    return host.strip("[]"), int(port)


def _prefix_end(prefix: bytes) -> bytes:
    return prefix[:-1] + bytes([prefix[-1] + 1])


@dataclass
class GroupSnapshot:
    """The group's keys as of one linearizable read."""

    revision: int = 0
    state: GroupState | None = None
    state_mod: int = 0
    master: MasterClaim | None = None
    master_create: int = 0
    master_lease: int = 0
    lives: dict[int, LiveReport] = field(default_factory=dict)
    live_mods: dict[int, int] = field(default_factory=dict)
    live_leases: dict[int, int] = field(default_factory=dict)
    live_creates: dict[int, int] = field(default_factory=dict)
    #: ids/<id> → check code of the replica that took it.
    ids: dict[int, str] = field(default_factory=dict)
    handover: Handover | None = None
    handover_mod: int = 0


def parse_group(prefix: str, kvs: Sequence[Any], revision: int) -> GroupSnapshot:
    """A snapshot from the key-values under `prefix` (bad values are logged and skipped)."""
    snap = GroupSnapshot(revision=revision)
    for kv in kvs:
        name = kv.key.decode(errors="replace")[len(prefix):]
        try:
            if name == "state":
                snap.state, snap.state_mod = GroupState.from_bytes(kv.value), kv.mod_revision
            elif name == "master":
                snap.master, snap.master_create, snap.master_lease = (
                    MasterClaim.from_bytes(kv.value), kv.create_revision, kv.lease)
            elif name == "handover":
                snap.handover, snap.handover_mod = Handover.from_bytes(kv.value), kv.mod_revision
            elif name.startswith("live/"):
                report = LiveReport.from_bytes(kv.value)
                snap.lives[report.broker_id] = report
                snap.live_mods[report.broker_id] = kv.mod_revision
                snap.live_leases[report.broker_id] = kv.lease
                snap.live_creates[report.broker_id] = kv.create_revision
            elif name.startswith("ids/") and name[4:].isdigit():
                snap.ids[int(name[4:])] = kv.value.decode(errors="replace")
        except ValueError as exc:
            log.warning("etcd key %s%s skipped: %s", prefix, name, exc)
    return snap


def _consume(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


async def _bounded(call: Any, timeout_s: float) -> Any:
    """`call`'s result within `timeout_s`, else TimeoutError. Unlike wait_for this never waits for
    the call to acknowledge its cancellation: a gRPC call stuck on a silent peer is left behind."""
    task = asyncio.ensure_future(call)
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        task.cancel()
        task.add_done_callback(_consume)
        raise TimeoutError(f"no answer within {timeout_s:g}s")
    if task.cancelled():  # the channel was closed under the call (another call's failure dropped it)
        raise ConnectionError("the etcd call was cancelled with its connection")
    return task.result()


class EtcdClient:
    """A connection to one of `endpoints`, moving to the next after a failure."""

    def __init__(self, endpoints: Sequence[str], timeout_s: float = 3.0) -> None:
        if not endpoints:
            raise ConfigError("no etcd endpoints")
        self._aetcd = _aetcd()
        import grpc

        #: What a failed call raises: aetcd's errors, gRPC's own, timeouts and socket errors.
        self._errors: tuple[type[BaseException], ...] = (
            self._aetcd.exceptions.ClientError, grpc.RpcError, TimeoutError, OSError, ValueError,
        )
        self.endpoints = list(endpoints)
        self.timeout_s = timeout_s
        self._index = 0
        self._client: Any = None

    def _current(self) -> Any:
        if self._client is None:
            host, port = _split(self.endpoints[self._index % len(self.endpoints)])
            self._client = self._aetcd.Client(host=host, port=port, timeout=self.timeout_s,
                                              connect_wait_timeout=max(1, int(self.timeout_s)))
        return self._client

    async def call(self, make: Any) -> Any:
        """Run `make(client)` (a coroutine) within the timeout; EtcdUnavailable on failure."""
        client = self._current()
        try:
            return await _bounded(make(client), self.timeout_s)
        except self._errors as exc:
            if "lease not found" in str(exc):
                raise LeaseGone(str(exc)) from None
            await self._drop()
            raise EtcdUnavailable(f"etcd {self.endpoints[(self._index - 1) % len(self.endpoints)]}: "
                                  f"{type(exc).__name__} {exc}".strip()) from None

    async def _drop(self) -> None:
        client, self._client = self._client, None
        self._index += 1
        if client is not None:
            with contextlib.suppress(*self._errors):
                await _bounded(client.close(), 1.0)

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(*self._errors):
                await _bounded(client.close(), 1.0)

    # --- plain calls --------------------------------------------------------------

    async def get_prefix(self, prefix: str) -> tuple[list[Any], int]:
        key = prefix.encode()

        async def run(c: Any) -> tuple[list[Any], int]:
            result = await c.get_range(key, _prefix_end(key))
            return list(result), int(result.header.revision)

        return await self._run(run)

    async def _run(self, make: Any) -> Any:
        return await self.call(make)

    async def grant(self, ttl_s: int) -> tuple[int, int]:
        """A new lease: (id, granted TTL in s)."""
        async def run(c: Any) -> tuple[int, int]:
            lease = await c.lease(ttl_s)
            return int(lease.id), int(lease.ttl)

        return await self._run(run)  # type: ignore[no-any-return]

    async def keepalive(self, lease_id: int) -> int:
        """Renew; the granted TTL, or ≤ 0 when the lease is gone."""
        async def run(c: Any) -> int:
            reply = await c.refresh_lease(lease_id)
            return int(reply.TTL) if reply is not None else -1

        return await self._run(run)  # type: ignore[no-any-return]

    async def revoke(self, lease_id: int) -> None:
        await self._run(lambda c: c.revoke_lease(lease_id))

    async def put(self, key: str, value: bytes, lease: int | None = None) -> None:
        await self._run(lambda c: c.put(key.encode(), value, lease=lease))

    async def txn(self, compare: Any, success: Any, failure: Any = None) -> bool:
        async def run(c: Any) -> bool:
            ok, _ = await c.transaction(compare=compare(c.transactions), success=success(c.transactions),
                                        failure=failure(c.transactions) if failure else [])
            return bool(ok)

        return await self._run(run)  # type: ignore[no-any-return]


class GroupKeys:
    """One broker group's keys and the transactions of docs/failover.md."""

    def __init__(self, client: EtcdClient, root: str, cluster: str, broker_name: str) -> None:
        self.client = client
        self.prefix = group_prefix(root, cluster, broker_name)

    def key(self, name: str) -> str:
        return self.prefix + name

    async def snapshot(self) -> GroupSnapshot:
        kvs, revision = await self.client.get_prefix(self.prefix)
        return parse_group(self.prefix, kvs, revision)

    async def create_id(self, broker_id: int, check_code: str) -> bool:
        key = self.key(f"ids/{broker_id}").encode()
        return await self.client.txn(lambda t: [t.create(key) == 0], lambda t: [t.put(key, check_code.encode())])

    async def put_live(self, report: LiveReport, lease: int) -> None:
        await self.client.put(self.key(f"live/{report.broker_id}"), report.to_bytes(), lease=lease)

    def _state_guard(self, t: Any, snap: GroupSnapshot) -> Any:
        state = self.key("state").encode()
        return t.mod(state) == snap.state_mod if snap.state_mod else t.create(state) == 0

    async def campaign(self, snap: GroupSnapshot, new_state: GroupState, claim: MasterClaim, lease: int) -> bool:
        """Take the master role: no master key, state unchanged since `snap`."""
        master, state = self.key("master").encode(), self.key("state").encode()
        return await self.client.txn(
            lambda t: [t.create(master) == 0, self._state_guard(t, snap)],
            lambda t: [t.put(master, claim.to_bytes(), lease=lease), t.put(state, new_state.to_bytes())],
        )

    async def alter_sss(self, snap: GroupSnapshot, new_state: GroupState) -> bool:
        """The master changes the in-sync set: its own term (master create revision) and state CAS."""
        master, state = self.key("master").encode(), self.key("state").encode()
        return await self.client.txn(
            lambda t: [t.create(master) == snap.master_create, self._state_guard(t, snap)],
            lambda t: [t.put(state, new_state.to_bytes())],
        )

    async def hand_over(self, snap: GroupSnapshot, new_state: GroupState, claim: MasterClaim,
                        target_lease: int) -> bool:
        """The master gives its role to `claim.broker_id`, attaching the claim to the target's lease
        (its live key unchanged since `snap`: created in the same life)."""
        master, state = self.key("master").encode(), self.key("state").encode()
        handover = self.key("handover").encode()
        target_live = self.key(f"live/{claim.broker_id}").encode()
        return await self.client.txn(
            lambda t: [t.create(master) == snap.master_create, self._state_guard(t, snap),
                       t.create(target_live) == snap.live_creates[claim.broker_id]],
            lambda t: [t.put(master, claim.to_bytes(), lease=target_lease), t.put(state, new_state.to_bytes()),
                       t.delete(handover)],
        )

    async def delete_master(self, create_revision: int) -> bool:
        """Remove a master key of this replica's previous life (it restarted before the lease ran out)."""
        master = self.key("master").encode()
        return await self.client.txn(lambda t: [t.create(master) == create_revision], lambda t: [t.delete(master)])

    async def request_handover(self, request: Handover) -> None:
        await self.client.put(self.key("handover"), request.to_bytes())

    async def cancel_handover(self, mod_revision: int) -> bool:
        handover = self.key("handover").encode()
        return await self.client.txn(lambda t: [t.mod(handover) == mod_revision], lambda t: [t.delete(handover)])


async def list_groups(client: EtcdClient, root: str) -> dict[tuple[str, str], GroupSnapshot]:
    """Every group under `root`, by (cluster, brokerName)."""
    base = root.rstrip("/") + "/"
    kvs, revision = await client.get_prefix(base)
    by_group: dict[tuple[str, str], list[Any]] = {}
    for kv in kvs:
        parts = kv.key.decode(errors="replace")[len(base):].split("/")
        if len(parts) >= 3:
            by_group.setdefault((parts[0], parts[1]), []).append(kv)
    return {
        (cluster, name): parse_group(group_prefix(root, cluster, name), items, revision)
        for (cluster, name), items in sorted(by_group.items())
    }
