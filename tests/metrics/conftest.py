"""One `orbitmq dev` with its metrics endpoint on an ephemeral port, and scrape helpers."""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.procs import ServerProcess, orbitmq_command, start_server

METRICS_LINE = re.compile(r"^metrics listening on (\S+):(\d+)\s*$")


def metrics_address(server: ServerProcess) -> str:
    for line in server.output:
        m = METRICS_LINE.match(line)
        if m:
            return f"{m.group(1)}:{m.group(2)}"
    raise AssertionError("no 'metrics listening on' line:\n" + "".join(server.output))


@dataclass
class Scrape:
    """Samples of one scrape: (name, labels) -> value, and every family name."""

    samples: dict[tuple[str, frozenset[tuple[str, str]]], float]
    families: set[str]
    text: str

    def sum(self, name: str, **labels: str) -> float:
        want = set(labels.items())
        return sum(v for (n, ls), v in self.samples.items() if n == name and want <= ls)

    def has(self, name: str, **labels: str) -> bool:
        want = set(labels.items())
        return any(n == name and want <= ls for (n, ls) in self.samples)

    def names(self) -> set[str]:
        return {n for (n, _) in self.samples} | self.families


def scrape(address: str) -> Scrape:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    families: set[str] = set()
    for family in text_string_to_metric_families(text):
        families.add(family.name)
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return Scrape(samples, families, text)


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    store = tmp_path_factory.mktemp("metrics-dev")
    server = start_server(
        orbitmq_command("dev", "--store", str(store), "--namesrv-port", "0", "--broker-port", "0",
                        "--host", "127.0.0.1", "--metrics-port", "0"),
        listeners=2,
    )
    try:
        yield server
    finally:
        server.stop()
