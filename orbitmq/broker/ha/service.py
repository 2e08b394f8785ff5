"""Replication by broker role: what the broker starts and stops.

* ASYNC_MASTER and SYNC_MASTER listen on the HA port (`HAMaster`); a
  SYNC_MASTER's sends also wait for the slave's ack (`wait_for_slave`).
* SLAVE runs the HA client (`HASlave`) and the metadata sync
  (`MetadataSync`). It learns the master from haMasterAddress, or from the
  NameServer's answer to its registration (masterAddr, haServerAddr).

The HA port follows tls.server.mode like the broker's other ports, and a slave
connects with TLS when tls.enable is set (the broker hands both in).
"""

from __future__ import annotations

import logging
import ssl

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.ha.insync import InSyncSet, ReplicaState
from orbitmq.broker.ha.master import HAMaster, MasterSettings
from orbitmq.broker.ha.metasync import MetadataSync
from orbitmq.broker.ha.slave import FollowSettings, HASlave, SlaveSettings
from orbitmq.errors import ConfigError
from orbitmq.remoting.tls import ServerTls
from orbitmq.store.api import MessageStore, PutMessageResult, PutMessageStatus
from orbitmq.store.config import BrokerRole
from orbitmq.store.epochs import EpochError, EpochFile

log = logging.getLogger("orbitmq.broker.ha")

def ha_listen_port(config: BrokerConfig) -> int:
    """The port the HA listener binds: haListenPort when set, else listenPort + 1 (0 stays 0)."""
    port = config.store.ha_listen_port
    if port >= 0:
        return port
    return config.listen_port + 1 if config.listen_port else 0


class Replication:
    """The replication side of one broker; see the module docstring."""

    def __init__(
        self,
        config: BrokerConfig,
        store: MessageStore,
        *,
        metadata: MetadataSync | None = None,
        server_tls: ServerTls | None = None,
        client_ssl: ssl.SSLContext | None = None,
        controller_mode: bool = False,
    ) -> None:
        self.role = config.store.broker_role
        #: Failover on (enableControllerMode): the epoch-aware HA stream, promote/follow.
        self.controller_mode = controller_mode
        #: The slaves whose acks count (coordination sets it; None members: all connected).
        self.in_sync_set = InSyncSet()
        #: This replica's broker id in its group (controller mode: what coordination assigned).
        self.replica_id = config.broker_id
        self._host = ""
        self._advertised_ip = ""
        self._ha_port: int | None = None
        if controller_mode and not isinstance(getattr(store, "epochs", None), EpochFile):
            raise ConfigError("enableControllerMode needs the file message store (it keeps the epoch file)")
        self.store = store
        self.master: HAMaster | None = None
        self.slave: HASlave | None = None
        self.metadata = metadata
        self._config = config
        self._server_tls = server_tls
        self._client_ssl = client_ssl
        self._ha_addr = ""
        #: SYNC_MASTER's wait for the slave's ack (slaveTimeout, 3000 ms in RocketMQ 4.9.3+).
        self.slave_timeout_s = config.store.slave_timeout / 1000.0

    @property
    def is_slave(self) -> bool:
        return self.role is BrokerRole.SLAVE

    async def start(self, host: str, advertised_ip: str) -> None:
        """Start what the role needs. A master binds the HA port on `host` (raises OSError when taken)."""
        config = self._config
        store_config = config.store
        self._host, self._advertised_ip = host, advertised_ip
        if self.is_slave:
            follow = FollowSettings(self.replica_id, self.epoch) if self.controller_mode else None
            self.slave = self._new_slave(store_config.ha_master_address, follow)
            self.slave.start()
            if self.metadata is not None:
                self.metadata.start()
            return
        await self._start_master()

    def _new_slave(self, master_ha_addr: str, follow: FollowSettings | None) -> HASlave:
        config = self._config
        store_config = config.store
        return HASlave(
            self.store,
            SlaveSettings(
                heartbeat_interval_ms=store_config.ha_send_heartbeat_interval,
                housekeeping_interval_ms=store_config.ha_housekeeping_interval,
                auth_secret=config.ha_auth_secret,
                ssl_context=self._client_ssl,
            ),
            master_ha_addr,
            follow,
        )

    async def _start_master(self) -> None:
        config = self._config
        store_config = config.store
        host = self._host
        advertised_ip = self._advertised_ip
        self.master = HAMaster(
            self.store,
            MasterSettings(
                host=host,
                port=ha_listen_port(config) if self._ha_port is None else self._ha_port,
                transfer_batch_size=store_config.ha_transfer_batch_size,
                heartbeat_interval_ms=store_config.ha_send_heartbeat_interval,
                housekeeping_interval_ms=store_config.ha_housekeeping_interval,
                slave_fallbehind_max=store_config.ha_slave_fallbehind_max,
                commit_log_file_size=store_config.mapped_file_size_commit_log,
                auth_secret=config.ha_auth_secret,
                tls=self._server_tls,
                controller_mode=self.controller_mode,
                # In controller mode a SYNC_MASTER waits for its whole in-sync set (allAck).
                all_ack=store_config.all_ack_in_sync_state_set
                or (self.controller_mode and self.role is BrokerRole.SYNC_MASTER),
                in_sync_replicas=store_config.in_sync_replicas,
                min_in_sync_replicas=store_config.min_in_sync_replicas,
            ),
            in_sync=self.in_sync_set,
            epochs=self._epochs if self.controller_mode else None,
        )
        _, port = await self.master.start()
        self._ha_port = port
        self._ha_addr = f"{config.broker_ip2 or advertised_ip}:{port}"
        log.info("broker %s HA service on port %d (%s)", config.broker_name, port, self._ha_addr)

    def ha_server_addr(self, live: BrokerConfig) -> str:
        """What registration advertises as haServerAddr: brokerIP2:haPort, the bound port on a
        master; a slave (no HA listener) advertises what its port would be, as RocketMQ does."""
        if self._ha_addr:
            return self._ha_addr
        return f"{live.broker_ip2 or live.advertised_ip}:{ha_listen_port(live)}"

    def on_registered(self, master_addr: str, master_ha_addr: str) -> None:
        """A NameServer named this slave's master; haMasterAddress in the config takes precedence."""
        if not self.is_slave:
            return
        if self.slave is not None and not self._config.store.ha_master_address:
            self.slave.set_master(master_ha_addr)
        if self.metadata is not None:
            self.metadata.set_master(master_addr)

    async def wait_for_slave(self, end_offset: int) -> PutMessageStatus:
        """SYNC_MASTER (or controller mode): PUT_OK, SLAVE_NOT_AVAILABLE, FLUSH_SLAVE_TIMEOUT or
        IN_SYNC_REPLICAS_NOT_ENOUGH for a put ending at `end_offset` (insync.py has the rule)."""
        if self.master is None:
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        return await self.master.wait_for_slave(end_offset, self.slave_timeout_s)

    @property
    def sync_master(self) -> bool:
        return self.role is BrokerRole.SYNC_MASTER

    @property
    def waits_for_replicas(self) -> bool:
        """Whether acknowledged puts wait for replicas: a SYNC_MASTER, or any master in controller mode."""
        return self.sync_master or self.controller_mode

    # --- controller mode: the API failover coordination drives -------------------------

    @property
    def _epochs(self) -> EpochFile:
        epochs = getattr(self.store, "epochs", None)
        if not isinstance(epochs, EpochFile):
            raise ConfigError("controller mode needs the file message store (it keeps the epoch file)")
        return epochs

    @property
    def epoch(self) -> int:
        """The newest master term in this store's epoch file (0: none yet)."""
        epochs = getattr(self.store, "epochs", None)
        return epochs.last_epoch() if isinstance(epochs, EpochFile) else 0

    @property
    def confirm_offset(self) -> int:
        """Master: how far the in-sync set holds the CommitLog (allAck), else its end.
        Slave: what the master last sent, capped by this store's end."""
        if self.master is not None:
            return self.master.confirm_offset
        if self.slave is not None and self.slave.follow is not None:
            return self.slave.confirm_offset
        return self.store.get_max_phy_offset()

    def replicas(self) -> dict[int, ReplicaState]:
        """Master: what each slave (by broker id) acknowledged, whether it is connected, when
        it last caught up (loop time). Empty on a slave."""
        return dict(self.master.replicas) if self.master is not None else {}

    async def promote(self, epoch: int) -> int:
        """Become the master of term `epoch`; returns the CommitLog offset where it starts.

        Stops the HA client, cuts a torn record at the end of the log, notes
        (epoch, max offset) in the epoch file (EpochError when `epoch` is not above the
        last one, unless it is the same entry again), switches the store to SYNC_MASTER
        and serves slaves on the HA port (the same port across role changes). Broker
        services (schedule, transactions, registration as brokerId 0) are the caller's.
        """
        if not self.controller_mode:
            raise ConfigError("promote needs controller mode (enableControllerMode=true)")
        epochs = self._epochs
        last = epochs.last
        if last is not None and epoch < last.epoch:
            raise EpochError(f"cannot become master of epoch {epoch}: this store is already in epoch {last.epoch}")
        if self.slave is not None:
            await self.slave.close()
            self.slave = None
        if self.metadata is not None:
            self.metadata.master_addr = ""  # a master's tables are its own from now on
        set_role = getattr(self.store, "set_role")  # noqa: B009 - the file store's (checked in __init__)
        set_role(BrokerRole.SYNC_MASTER)
        if last is None or epoch > last.epoch:
            epochs.append(epoch, self.store.get_max_phy_offset())
        found = epochs.find(epoch)
        assert found is not None
        start = found.start_offset
        self.role = BrokerRole.SYNC_MASTER
        if self.master is None:
            await self._start_master()
        log.info("promoted to master of epoch %d at CommitLog offset %d", epoch, start)
        return start

    async def follow(self, master_ha_addr: str, epoch: int, master_addr: str = "") -> None:
        """Become a slave of the master of term `epoch` at `master_ha_addr` (host:port of its HA port).

        Stops serving slaves, switches the store to SLAVE (cutting a torn tail) and starts
        the HA client; at its handshake the store is truncated to where it agrees with the
        master's epochs and copying resumes from there. `follow_failed` says why it stopped
        when the logs share no epoch (the replica must be wiped). EpochError when `epoch` is
        below this store's last epoch. `master_addr` (the master's remoting address) points
        the metadata sync at it when this broker has one (it started as a slave).
        """
        if not self.controller_mode:
            raise ConfigError("follow needs controller mode (enableControllerMode=true)")
        last = self._epochs.last_epoch()
        if epoch < last:
            raise EpochError(f"cannot follow epoch {epoch}: this store is already in epoch {last}")
        if self.master is not None:
            await self.master.close()
            self.master = None
        if self.slave is not None:
            await self.slave.close()
            self.slave = None
        set_role = getattr(self.store, "set_role")  # noqa: B009 - the file store's (checked in __init__)
        set_role(BrokerRole.SLAVE)
        self.role = BrokerRole.SLAVE
        self.slave = self._new_slave(master_ha_addr, FollowSettings(self.replica_id, epoch))
        self.slave.start()
        if self.metadata is not None and master_addr:
            self.metadata.set_master(master_addr)
        log.info("following the master of epoch %d at %s", epoch, master_ha_addr)

    def enough_replicas(self) -> bool:
        """minInSyncReplicas holds (controller mode master): the master and its in-sync set are
        enough copies."""
        return self.master.enough_replicas() if self.master is not None else True

    def put_refusal(self) -> PutMessageResult | None:
        """Checked before a put that waits for replicas is appended (RocketMQ 5's CommitLog
        does the same): IN_SYNC_REPLICAS_NOT_ENOUGH when this controller-mode master has fewer
        in-sync copies than minInSyncReplicas, so a refused put leaves nothing in the store.
        None: the put may go ahead."""
        master = self.master
        if master is None or not self.controller_mode or master.enough_replicas():
            return None
        members = master.in_sync.members
        slaves = (len(members) if members is not None
                  else sum(1 for r in master.replicas.values() if r.connected and not r.learner))
        return PutMessageResult(
            PutMessageStatus.IN_SYNC_REPLICAS_NOT_ENOUGH,
            remark=f"in-sync replicas not enough: {1 + slaves} in-sync copies, minInSyncReplicas is "
            f"{master.settings.min_in_sync_replicas}; nothing was stored, send again later",
        )

    @property
    def follow_failed(self) -> str:
        """Why following stopped for good (no common epoch with the master), or ""."""
        return self.slave.failed if self.slave is not None else ""

    async def close(self) -> None:
        if self.metadata is not None:
            await self.metadata.close()
        if self.slave is not None:
            await self.slave.close()
        if self.master is not None:
            await self.master.close()
