"""The NameServer's Prometheus families, read from its route table at scrape time.

Series carry `cluster` (empty), `node_type="namesrv"` and `node_id` (the
listen address).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitmq.metrics.broker import COMMON_LABELS
from orbitmq.metrics.family import Family

if TYPE_CHECKING:
    from orbitmq.namesrv.server import NameServer


class NamesrvMetrics:
    """`families()` of one NameServer; a FamilySource."""

    def __init__(self, namesrv: NameServer) -> None:
        self.namesrv = namesrv

    def __call__(self) -> list[Family]:
        return self.families()

    def families(self) -> list[Family]:
        ns = self.namesrv
        try:
            host, port = ns.address
        except RuntimeError:  # not started or closed
            return []
        common = ("", "namesrv", f"{host}:{port}")
        routes = ns.routes
        info = routes.cluster_info()
        live = set(routes.broker_addrs())

        def family(name: str, text: str, labels: tuple[str, ...] = ()) -> Family:
            return Family(name, "gauge", text, labels, common, COMMON_LABELS)

        topics = family("orbitmq_namesrv_topics", "Topics with a route.")
        topics.add((), len(routes.all_topics()))
        brokers = family("orbitmq_namesrv_live_brokers", "Broker addresses registered and not expired.")
        brokers.add((), len(live))
        labels = ("broker_cluster", "broker_name", "broker_id", "broker_addr")
        up = family("orbitmq_namesrv_broker_up", "1 per registered broker address that is live.", labels)
        age = family("orbitmq_namesrv_broker_last_update_age_milliseconds",
                     "Time since the broker last registered (its heartbeat), ms.", labels)
        now = routes.clock()
        for cluster, broker_names in sorted(info.cluster_addr_table.items()):
            for name in broker_names:
                data = info.broker_addr_table.get(name)
                if data is None:
                    continue
                for broker_id, addr in sorted(data.broker_addrs.items()):
                    values = (cluster, name, str(broker_id), addr)
                    up.add(values, 1 if addr in live else 0)
                    seen = routes.live_info(addr)
                    if seen is not None:
                        age.add(values, max(now - seen.last_update_ms, 0))
        return [topics, brokers, up, age]
