"""Prometheus metrics of brokers and NameServers (docs/metrics.md).

`broker.BrokerCollector` and `namesrv.NamesrvCollector` are prometheus_client
collectors that read the servers' own state when a scrape asks (read only;
the request path keeps plain int counters in broker/stats.py and nothing
more); `lag.LagTable` computes consumer lag per group, topic and queue from
offsets and consume queues without scanning; `http.MetricsServer` serves
`/metrics` on the server's event loop (aiohttp).
"""

from orbitmq.metrics.broker import BrokerCollector
from orbitmq.metrics.http import MetricsServer, broker_registry, namesrv_registry, serve_metrics
from orbitmq.metrics.namesrv import NamesrvCollector

__all__ = ["BrokerCollector", "MetricsServer", "NamesrvCollector", "broker_registry", "namesrv_registry", "serve_metrics"]
