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
from orbitmq.broker.ha.master import HAMaster, MasterSettings
from orbitmq.broker.ha.metasync import MetadataSync
from orbitmq.broker.ha.slave import HASlave, SlaveSettings
from orbitmq.remoting.tls import ServerTls
from orbitmq.store.api import MessageStore, PutMessageStatus
from orbitmq.store.config import BrokerRole

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
    ) -> None:
        self.role = config.store.broker_role
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
        if self.is_slave:
            self.slave = HASlave(
                self.store,
                SlaveSettings(
                    heartbeat_interval_ms=store_config.ha_send_heartbeat_interval,
                    housekeeping_interval_ms=store_config.ha_housekeeping_interval,
                    auth_secret=config.ha_auth_secret,
                    ssl_context=self._client_ssl,
                ),
                store_config.ha_master_address,
            )
            self.slave.start()
            if self.metadata is not None:
                self.metadata.start()
            return
        self.master = HAMaster(
            self.store,
            MasterSettings(
                host=host,
                port=ha_listen_port(config),
                transfer_batch_size=store_config.ha_transfer_batch_size,
                heartbeat_interval_ms=store_config.ha_send_heartbeat_interval,
                housekeeping_interval_ms=store_config.ha_housekeeping_interval,
                slave_fallbehind_max=store_config.ha_slave_fallbehind_max,
                commit_log_file_size=store_config.mapped_file_size_commit_log,
                auth_secret=config.ha_auth_secret,
                tls=self._server_tls,
            ),
        )
        _, port = await self.master.start()
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
        """SYNC_MASTER: PUT_OK, SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT for a put ending at `end_offset`."""
        if self.master is None:
            return PutMessageStatus.SLAVE_NOT_AVAILABLE
        return await self.master.wait_for_slave(end_offset, self.slave_timeout_s)

    @property
    def sync_master(self) -> bool:
        return self.role is BrokerRole.SYNC_MASTER

    async def close(self) -> None:
        if self.metadata is not None:
            await self.metadata.close()
        if self.slave is not None:
            await self.slave.close()
        if self.master is not None:
            await self.master.close()
