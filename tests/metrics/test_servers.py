"""A standalone broker and NameServer serve /metrics when metricsExporterType=PROM; the keys are
checked like every other; without them nothing listens."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from orbitmq.broker.config import BrokerConfig
from orbitmq.errors import ConfigError
from orbitmq.namesrv.config import NamesrvConfig
from tests.metrics.conftest import METRICS_LINE, metrics_address, scrape
from tests.support.procs import eventually, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(90)


def test_broker_and_namesrv_serve_metrics_on_their_own_ports(tmp_path: Path) -> None:
    ns_conf = tmp_path / "namesrv.properties"
    ns_conf.write_text(
        f"listenHost=127.0.0.1\nlistenPort=0\nkvConfigPath={tmp_path / 'kv.json'}\n"
        "metricsExporterType=PROM\nmetricsPromExporterPort=0\n"
    )
    namesrv = start_server(orbitmq_command("namesrv", "-c", str(ns_conf)))
    try:
        b_conf = tmp_path / "broker.conf"
        b_conf.write_text(
            f"brokerName=metrics-b\nbrokerClusterName=MetricsCluster\nnamesrvAddr={namesrv.addr}\n"
            f"listenHost=127.0.0.1\nlistenPort=0\nstorePathRootDir={tmp_path / 'store'}\n"
            "metricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.1\nmetricsPromExporterPort=0\n"
        )
        broker = start_server(orbitmq_command("broker", "-c", str(b_conf)))
        try:
            ns_metrics, broker_metrics = metrics_address(namesrv), metrics_address(broker)
            assert ns_metrics != broker_metrics and ns_metrics != namesrv.addr and broker_metrics != broker.addr
            got = scrape(broker_metrics)
            assert got.sum("rocketmq_topic_number", cluster="MetricsCluster", node_id="metrics-b",
                           node_type="broker") > 0
            assert got.has("rocketmq_storage_size_bytes", storage_type="local", storage_medium="disk")
            eventually(
                lambda: scrape(ns_metrics).sum("orbitmq_namesrv_broker_up", broker_name="metrics-b",
                                               broker_cluster="MetricsCluster", broker_addr=broker.addr) == 1,
                timeout=20,
            )
        finally:
            broker.stop()
    finally:
        namesrv.stop()


def test_no_metrics_port_unless_asked(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"listenHost=127.0.0.1\nlistenPort=0\nstorePathRootDir={tmp_path / 'store'}\n")
    broker = start_server(orbitmq_command("broker", "-c", str(conf)))
    try:
        assert not any(METRICS_LINE.match(line) for line in broker.output)
    finally:
        broker.stop()
    dev = start_server(
        orbitmq_command("dev", "--store", str(tmp_path / "dev"), "--namesrv-port", "0", "--broker-port", "0",
                        "--no-metrics"),
        listeners=2,
    )
    try:
        assert not any(METRICS_LINE.match(line) for line in dev.output)
    finally:
        dev.stop()


@pytest.mark.parametrize(
    "line, key",
    [("metricsExporterType=OTLP_GRPC", "metricsExporterType"), ("metricsPromExporterPort=70000", "metricsPromExporterPort")],
)
def test_bad_metrics_keys_exit_2_naming_the_key(tmp_path: Path, line: str, key: str) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(line + "\n")
    done = subprocess.run(orbitmq_command("broker", "-c", str(conf)), check=False, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2 and key in done.stderr
    conf.write_text(line + "\n")
    done = subprocess.run(orbitmq_command("namesrv", "-c", str(conf)), check=False, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 2 and key in done.stderr


def test_metrics_keys_need_a_restart() -> None:
    config = BrokerConfig()
    with pytest.raises(ConfigError, match="metricsPromExporterPort"):
        config.with_properties({"metricsPromExporterPort": "9999"})
    with pytest.raises(ConfigError, match="metricsExporterType"):
        NamesrvConfig().updated({"metricsExporterType": "PROM"})
    assert NamesrvConfig.from_properties({"metricsExporterType": "PROM"}).metrics_exporter_type == "PROM"


def test_dev_gives_way_when_the_default_metrics_port_is_taken(tmp_path: Path) -> None:
    import contextlib
    import socket

    holder = socket.socket()
    with contextlib.suppress(OSError):  # already taken by someone else: just as good
        holder.bind(("127.0.0.1", 5557))
        holder.listen()
    try:
        dev = start_server(
            orbitmq_command("dev", "--store", str(tmp_path / "dev"), "--namesrv-port", "0", "--broker-port", "0"),
            listeners=2,
        )
        try:
            address = metrics_address(dev)
            assert not address.endswith(":5557")
            assert scrape(address).has("rocketmq_topic_number")
        finally:
            dev.stop()
    finally:
        holder.close()
