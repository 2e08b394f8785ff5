"""Master/slave replication (HA) as RocketMQ 4.x does it.

`protocol` is the sans-IO codec of the HA stream, `master` the HA listener
of a master, `slave` the HA client of a slave, `acks` the SYNC_MASTER ack
waiting, `metasync` the slave's periodic copy of the master's tables, and
`service.Replication` what a broker starts for its role.
"""

from orbitmq.broker.ha.service import Replication, ha_listen_port

__all__ = ["Replication", "ha_listen_port"]
