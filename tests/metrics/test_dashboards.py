"""The shipped Grafana dashboard and alert rules only name metrics a live broker exports."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.metrics.conftest import Scrape, metrics_address, scrape
from tests.support.procs import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "orbitmq.json"
ALERTS = ROOT / "docs" / "prometheus" / "orbitmq-alerts.yml"
METRIC = re.compile(r"\b((?:rocketmq|orbitmq)_[a-z0-9_]+)\b")
SUFFIXES = ("_total", "_bucket", "_count", "_sum")

pytestmark = pytest.mark.timeout(60)


def dashboard_expressions() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    exprs: list[str] = []

    def walk(panels: list[dict[str, Any]]) -> None:
        for panel in panels:
            if panel.get("type") == "row":
                walk(panel.get("panels", []))
                continue
            targets = panel.get("targets", [])
            assert targets, f"panel {panel.get('title')!r} has no query"
            exprs.extend(t["expr"] for t in targets)

    walk(board["panels"])
    exprs.extend(v["query"] for v in board["templating"]["list"] if v.get("type") == "query")
    return exprs


def alert_expressions() -> list[str]:
    rules = yaml.safe_load(ALERTS.read_text())
    exprs = []
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert rule.get("alert") and rule.get("expr"), rule
            exprs.append(str(rule["expr"]))
    return exprs


def exported(name: str, got: Scrape) -> bool:
    names = got.names()
    if name in names:
        return True
    return any(name.endswith(s) and name[: -len(s)] in got.families for s in SUFFIXES)


def missing(exprs: list[str], got: Scrape) -> list[str]:
    out = []
    for expr in exprs:
        found = METRIC.findall(expr)
        assert found, f"no OrbitMQ metric named in {expr!r}"
        out.extend(name for name in found if not exported(name, got))
    return sorted(set(out))


def test_the_extraction_sees_an_unknown_name(dev: ServerProcess) -> None:
    got = scrape(metrics_address(dev))
    assert missing(["rate(rocketmq_messages_in_total[1m])"], got) == []
    assert missing(["rocketmq_no_such_metric_total"], got) == ["rocketmq_no_such_metric_total"]


def test_every_dashboard_query_names_an_exported_metric(dev: ServerProcess) -> None:
    exprs = dashboard_expressions()
    assert len(exprs) > 20
    assert missing(exprs, scrape(metrics_address(dev))) == []


def test_every_alert_rule_names_an_exported_metric(dev: ServerProcess) -> None:
    exprs = alert_expressions()
    text = " ".join(exprs)
    for subject in ("consumer_lag", "disk_ratio", "flush_behind", "slave_behind"):
        assert subject in text, f"no alert on {subject}"
    assert missing(exprs, scrape(metrics_address(dev))) == []
