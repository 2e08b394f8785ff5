"""The NameServer's Prometheus families, read from its route table at scrape time.

Series carry `cluster` (empty), `node_type="namesrv"` and `node_id` (the
listen address).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from orbitmq.namesrv.server import NameServer

COMMON_LABELS = ("cluster", "node_type", "node_id")


class NamesrvCollector(Collector):
    def __init__(self, namesrv: NameServer) -> None:
        self.namesrv = namesrv

    def collect(self) -> Iterator[Metric]:
        ns = self.namesrv
        try:
            host, port = ns.address
        except RuntimeError:  # not started or closed
            return
        common = ["", "namesrv", f"{host}:{port}"]
        routes = ns.routes
        info = routes.cluster_info()
        live = set(routes.broker_addrs())
        gauge = GaugeMetricFamily("orbitmq_namesrv_topics", "Topics with a route.", labels=COMMON_LABELS)
        gauge.add_metric(common, len(routes.all_topics()))
        yield gauge
        gauge = GaugeMetricFamily("orbitmq_namesrv_live_brokers", "Broker addresses registered and not expired.",
                                  labels=COMMON_LABELS)
        gauge.add_metric(common, len(live))
        yield gauge
        labels = (*COMMON_LABELS, "broker_cluster", "broker_name", "broker_id", "broker_addr")
        brokers = GaugeMetricFamily("orbitmq_namesrv_broker_up", "1 per registered broker address.", labels=labels)
        age = GaugeMetricFamily(
            "orbitmq_namesrv_broker_last_update_age_milliseconds",
            "Time since the broker last registered (its heartbeat), ms.", labels=labels,
        )
        now = routes.clock()
        for cluster, broker_names in sorted(info.cluster_addr_table.items()):
            for name in broker_names:
                data = info.broker_addr_table.get(name)
                if data is None:
                    continue
                for broker_id, addr in sorted(data.broker_addrs.items()):
                    values = [*common, cluster, name, str(broker_id), addr]
                    brokers.add_metric(values, 1 if addr in live else 0)
                    seen = routes.live_info(addr)
                    if seen is not None:
                        age.add_metric(values, max(now - seen.last_update_ms, 0))
        yield brokers
        yield age
