"""Prometheus metrics of brokers and NameServers (docs/metrics.md).

`broker.BrokerMetrics` and `namesrv.NamesrvMetrics` read the servers' own
state when a scrape asks (read only; the request path keeps plain int counters
in broker/stats.py and nothing more) and return `family.Family` rows;
`lag.LagTable` computes consumer lag per group, topic and queue from offsets
and consume queues without scanning; `http.MetricsServer` serves `/metrics` on
the server's event loop (aiohttp), rendering the rows itself or through
prometheus_client (OpenMetrics, `FamilyCollector` for a CollectorRegistry).
"""

from orbitmq.metrics.broker import BrokerMetrics
from orbitmq.metrics.family import Family, FamilyCollector, FamilySource, render_text
from orbitmq.metrics.http import MetricsServer, render, serve_metrics
from orbitmq.metrics.namesrv import NamesrvMetrics

__all__ = [
    "BrokerMetrics", "Family", "FamilyCollector", "FamilySource", "MetricsServer", "NamesrvMetrics", "render",
    "render_text", "serve_metrics",
]
