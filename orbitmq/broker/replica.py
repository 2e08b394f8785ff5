"""Controller mode: the broker's side of a role change (failover.controller.ReplicaHost).

Becoming master (RocketMQ 5's order): `Replication.promote(epoch)` (stop copying, cut a
torn tail, epoch file entry, store role, HA port), run as brokerId 0, start delay and timer
delivery, register with the NameServers. Becoming slave: stop the master services,
`Replication.follow(haAddr, epoch)` towards the new master's HA address (from etcd) under
the replica's own id, sync metadata from the master, register.

Role changes run one at a time, on the broker's event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import TYPE_CHECKING, Any

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.ha import Replication
from orbitmq.store.config import BrokerRole

if TYPE_CHECKING:
    from orbitmq.broker.server import Broker

log = logging.getLogger("orbitmq.failover")


class BrokerReplica:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        configured = broker.live.value.store.broker_role
        #: The master flavour this replica runs when elected.
        self.master_role = BrokerRole.SYNC_MASTER if configured is BrokerRole.SLAVE else configured
        self._lock = asyncio.Lock()
        #: The newest epoch whose data this replica holds (when the store keeps no epoch file).
        self._epoch = 0
        self._master_services = False

    # --- what the controller reads ----------------------------------------------------------

    @property
    def _store(self) -> Any:
        return self.broker.store

    def max_offset(self) -> int:
        store = self._store
        return int(store.get_max_phy_offset()) if store is not None else 0

    def last_epoch(self) -> int:
        epochs = getattr(self._store, "epochs", None)
        if epochs is not None:
            return max(int(epochs.last_epoch()), 0)
        return self._epoch

    def own_addr(self) -> str:
        return self.broker.broker_addr

    def own_ha_addr(self) -> str:
        return self.broker._ha_server_addr()

    # --- configs of each role -------------------------------------------------------------

    def slave_config(self, config: BrokerConfig, broker_id: int, master_ha_addr: str) -> BrokerConfig:
        store = dataclasses.replace(config.store, broker_role=BrokerRole.SLAVE, ha_master_address=master_ha_addr)
        return dataclasses.replace(config, broker_id=broker_id, store=store)

    def master_config(self, config: BrokerConfig) -> BrokerConfig:
        store = dataclasses.replace(config.store, broker_role=self.master_role, ha_master_address="")
        return dataclasses.replace(config, broker_id=0, store=store)

    # --- role changes (the controller-mode Replication: docs/failover-store.md) -----------------

    def _replication(self) -> Replication:
        replication = self.broker.replication
        assert replication is not None and replication.controller_mode, "controller mode without its Replication"
        return replication

    async def stop_replicating(self) -> None:
        async with self._lock:
            replication = self._replication()
            slave, replication.slave = replication.slave, None
            if slave is not None:
                await slave.close()

    def connected_replicas(self) -> set[int] | None:
        return {broker_id for broker_id, info in self._replication().replicas().items() if info.connected}

    def set_in_sync(self, broker_ids: tuple[int, ...], own_id: int) -> None:
        """The master's in-sync set (ids, own included) for the acknowledgement rule."""
        self._replication().in_sync_set.set([i for i in broker_ids if i != own_id])

    async def become_master(self, epoch: int) -> None:
        async with self._lock:
            broker = self.broker
            replication = self._replication()
            # The store side's own order: stop copying, cut a torn tail, epoch entry, store role, HA port.
            replication.in_sync_set.set([])  # a master of a new term starts with an in-sync set of itself
            await replication.promote(epoch)
            self._epoch = epoch
            broker.live.value = self.master_config(broker.live.value)
            if not self._master_services and broker.schedule is not None and broker.timers is not None:
                await broker.schedule.start()
                await broker.timers.start()
                self._master_services = True
            broker.topics.data_version = broker.topics.data_version.next(broker.clock_ms(), epoch)
            await self._register()

    async def become_slave(self, broker_id: int, epoch: int, master_addr: str, master_ha_addr: str) -> None:
        async with self._lock:
            broker = self.broker
            replication = self._replication()
            if self._master_services and broker.schedule is not None and broker.timers is not None:
                await broker.schedule.close()
                await broker.timers.close()
                self._master_services = False
            replication.replica_id = broker_id
            await replication.follow(master_ha_addr, epoch)
            self._epoch = max(self._epoch, epoch)
            broker.live.value = self.slave_config(broker.live.value, broker_id, master_ha_addr)
            metadata = replication.metadata
            if metadata is not None:
                await metadata.stop()  # restarted towards the new master (close() would end its client)
                if master_addr:
                    metadata.set_master(master_addr)
                metadata.start()
            await self._register()

    async def _register(self) -> None:
        registrar = self.broker.registrar
        if registrar is None:
            return
        try:
            await registrar.register_all()
        except Exception:  # the periodic registration tries again
            log.exception("registration after a role change failed")
