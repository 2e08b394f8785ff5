"""Metric families as plain rows, their Prometheus text rendering, and their prometheus_client form.

A collector here returns `Family` objects: a name, a type, label names and
rows of label values with a value (histograms: per-bucket counts and a sum).
`render_text` writes them in the Prometheus text format 0.0.4 directly, one
string format per row: a broker with tens of thousands of series (1,000 topics
x 8 queues of lag) renders in tens of milliseconds, several times faster than
building prometheus_client Metric objects and formatting those.
`FamilyCollector` turns the same families into prometheus_client metrics, for
its registry API and for OpenMetrics scrapes.

Counter names carry `_total`, histogram names their unit (RocketMQ 5's wire
names); `# TYPE` lines name what the samples are called.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

Row = tuple[Sequence[str], float]
#: Label values, per-bucket counts (not cumulative; the last one is +Inf), sum.
HistogramRow = tuple[Sequence[str], Sequence[float], float]


@dataclass(slots=True)
class Family:
    name: str
    kind: str  # "counter", "gauge" or "histogram"
    help: str
    labels: tuple[str, ...]
    #: Label values shared by every row (the node's), rendered once; they come first.
    common: tuple[str, ...] = ()
    common_labels: tuple[str, ...] = ()
    rows: list[Row] = field(default_factory=list)
    histogram_rows: list[HistogramRow] = field(default_factory=list)
    bounds: tuple[float, ...] = ()

    def add(self, values: Sequence[str], value: float) -> None:
        self.rows.append((values, value))

    def add_histogram(self, values: Sequence[str], counts: Sequence[float], total: float) -> None:
        self.histogram_rows.append((values, counts, total))


FamilySource = Callable[[], list[Family]]

_escaped: dict[str, str] = {}


def escape(value: str) -> str:
    """A label value as the text format quotes it (backslash, double quote, newline escaped)."""
    found = _escaped.get(value)
    if found is None:
        found = value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
        if len(_escaped) > 100_000:
            _escaped.clear()
        _escaped[value] = found
    return found


def number(value: float) -> str:
    f = float(value)
    if f == math.inf:
        return "+Inf"
    if f == -math.inf:
        return "-Inf"
    return "NaN" if math.isnan(f) else repr(f)


def _template(family: Family, extra: str = "") -> tuple[str, str]:
    """(prefix with the common labels, format string for the row labels)."""
    common = ",".join(f'{k}="{escape(v)}"' for k, v in zip(family.common_labels, family.common, strict=True))
    parts = [f'{k}="{{}}"' for k in family.labels]
    if extra:
        parts.append(extra)
    rest = ",".join(parts)
    if common and rest:
        common += ","
    return common, rest


def render_text(families: Iterable[Family]) -> bytes:
    out: list[str] = []
    append = out.append
    for family in families:
        name = family.name
        append(f"# HELP {name} {family.help}\n# TYPE {name} {family.kind}\n")
        if family.kind != "histogram":
            common, rest = _template(family)
            head = f"{name}{{{common}"
            fmt = rest.format
            for values, value in family.rows:
                append(f"{head}{fmt(*map(escape, values))}}} {number(value)}\n")
            continue
        base = name
        common, rest = _template(family)
        les = [number(float(b)) for b in family.bounds] + ["+Inf"]
        for values, counts, total in family.histogram_rows:
            labels = common + rest.format(*map(escape, values))
            sep = "," if labels else ""
            running = 0.0
            for le, count in zip(les, counts, strict=True):
                running += count
                append(f'{base}_bucket{{{labels}{sep}le="{le}"}} {number(running)}\n')
            append(f"{base}_count{{{labels}}} {number(running)}\n{base}_sum{{{labels}}} {number(total)}\n")
    return "".join(out).encode()


def to_metric(family: Family) -> Metric:
    """The prometheus_client form of a family."""
    labels = [*family.common_labels, *family.labels]
    common = list(family.common)
    metric: CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily
    if family.kind == "histogram":
        metric = HistogramMetricFamily(family.name, family.help, labels=labels)
        les = [str(float(b)) for b in family.bounds] + ["+Inf"]
        for values, counts, total in family.histogram_rows:
            cumulative: list[tuple[str, float]] = []
            running = 0.0
            for le, count in zip(les, counts, strict=True):
                running += count
                cumulative.append((le, running))
            metric.add_metric([*common, *values], cumulative, total)
        return metric
    if family.kind == "counter":
        metric = CounterMetricFamily(family.name, family.help, labels=labels)
    else:
        metric = GaugeMetricFamily(family.name, family.help, labels=labels)
    for values, value in family.rows:
        metric.add_metric([*common, *values], value)
    return metric


class FamilyCollector(Collector):
    """A prometheus_client collector over a family source (for a CollectorRegistry)."""

    def __init__(self, source: FamilySource) -> None:
        self.source = source

    def collect(self) -> Iterator[Metric]:
        for family in self.source():
            yield to_metric(family)
