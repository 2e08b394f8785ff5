"""`orbitmq dev`: a NameServer and a Broker in one process, for development.

`orbitmq dev [--store DIR] [--namesrv-port 9876] [--broker-port 10911] [--host 127.0.0.1]
[--metrics-port 5557 | --no-metrics] [--grpc-port 8081 | --no-grpc] [--console HOST:PORT|off] [--replicas N]` runs both on one event loop with
the store in ./orbitmq-data unless told otherwise; the broker registers with the NameServer next
to it. Both servers' Prometheus metrics are served on HOST:5557/metrics and the console on
127.0.0.1:8080. RocketMQ 5 gRPC clients are served on HOST:8081 (`proxy listening on HOST:PORT`), TLS and
plain text side by side unless the config file sets `tls.server.mode` (`dev_grpc_tls`).

It prints one stdout line per listener once bound (`namesrv listening on
HOST:PORT`, `metrics listening on HOST:PORT`, then `broker <name> listening on HOST:PORT`), logs to stderr,
stops cleanly on SIGINT/SIGTERM (exit 0), and exits with code 2 on bad flags
or configuration. This module only composes the two servers; each is built
and configured by its own package. `--replicas N` (N > 1) runs etcd and a failover group of N
broker processes instead (orbitmq/failover/devgroup.py).
"""

from __future__ import annotations

import dataclasses
import logging
import os

import click

from orbitmq.broker.cli import (
    DEV_METRICS_PORT,
    ConfigProblem,
    MetricsPlan,
    announce,
    build_config,
    read_config_file,
    run_broker_until,
    setup_logging,
    stop_signals,
)
from orbitmq.broker.config import BrokerConfig
from orbitmq.console.cli import dev_console_option
from orbitmq.errors import ConfigError
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.namesrv.server import NameServer
from orbitmq.remoting.loop import run
from orbitmq.remoting.tls import TlsMode, TlsSettings

log = logging.getLogger("orbitmq.dev")

#: `orbitmq dev` keeps CommitLog files smaller than RocketMQ's 1 GiB so a first start
#: does not pre-touch a gigabyte on a laptop; the format is the same.
DEV_COMMIT_LOG_FILE_SIZE = 128 * 1024 * 1024
#: `orbitmq dev`'s duplicate window (broker/dedup.py): ten minutes covers a client's retries and a
#: Spark micro-batch replayed after a driver restart.
DEV_DUPLICATE_WINDOW_SECONDS = 600
#: `orbitmq dev`'s gRPC port for RocketMQ 5 clients (the Apache proxy's default).
DEV_GRPC_PORT = 8081


async def serve_dev(
    host: str,
    namesrv_port: int,
    broker_config: BrokerConfig,
    store_dir: str,
    console_listen: str = "off",
    metrics_port: int | None = None,
    grpc_port: int | None = None,
    grpc_tls: TlsSettings | None = None,
) -> None:
    from orbitmq.console.cli import dev_console

    ns_config = NamesrvConfig(
        listen_host=host,
        listen_port=namesrv_port,
        kv_config_path=os.path.join(store_dir, "namesrv", "kvConfig.json"),
        tls=broker_config.tls,  # the tls.* keys of the config file serve both ports
    )
    async with stop_signals() as stop:
        ns = NameServer(ns_config)
        try:
            ns_host, ns_port = await ns.start()
        except OSError as exc:
            raise click.ClickException(f"cannot start namesrv on {host}:{namesrv_port}: {exc.strerror or exc}") from None
        except ConfigError as exc:
            raise ConfigProblem(str(exc)) from None
        try:
            announce(f"namesrv listening on {ns_host}:{ns_port}")
            announce(f"store {os.path.abspath(store_dir)}")
            config = broker_config.with_properties({"namesrvAddr": f"{ns_host}:{ns_port}"})
            if grpc_port is not None:  # the gRPC front for RocketMQ 5 clients (orbitmq/proxy/)
                config = dataclasses.replace(config, enable_grpc_proxy=True, grpc_server_port=grpc_port)
            console = dev_console(console_listen, f"{ns_host}:{ns_port}", config.acl_enable, config.tls)
            metrics = None
            if metrics_port is not None:  # one endpoint for both servers
                from orbitmq.metrics import NamesrvMetrics

                metrics = MetricsPlan(host, metrics_port, [NamesrvMetrics(ns)], metrics_port == DEV_METRICS_PORT)
            await run_broker_until(config, stop, console, metrics, grpc_give_way=grpc_port == DEV_GRPC_PORT,
                                   grpc_tls=grpc_tls)
        finally:
            await ns.close()


@click.command("dev", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--store", "store_dir", default="orbitmq-data", show_default=True, metavar="DIR", help="Data folder.")
@click.option("--namesrv-port", default=9876, show_default=True, type=click.IntRange(0, 65535))
@click.option("--broker-port", default=10911, show_default=True, type=click.IntRange(0, 65535))
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface both servers listen on.")
@click.option(
    "--metrics-port", default=DEV_METRICS_PORT, show_default=True, type=click.IntRange(0, 65535),
    help="Prometheus /metrics port on --host (the default gives way to a free port when in use).",
)
@click.option("--no-metrics", is_flag=True, help="Serve no /metrics endpoint.")
@click.option(
    "--grpc-port", default=DEV_GRPC_PORT, show_default=True, type=click.IntRange(0, 65535),
    help="RocketMQ 5 gRPC clients' port on --host, TLS and plain text side by side unless the config file "
    "sets tls.server.mode (the default port gives way to a free port when in use).",
)
@click.option("--no-grpc", is_flag=True, help="Serve no gRPC front for RocketMQ 5 clients.")
@click.option("-c", "--config-file", "config_file", metavar="FILE", help="Extra broker.conf settings.")
@dev_console_option
@click.option("--replicas", default=1, show_default=True, type=click.IntRange(1, 9),
              help="More than 1: etcd and a failover group of this many broker processes "
              "(docs/failover.md); the first master on --broker-port, the others 10 ports apart "
              "(no console, metrics or gRPC endpoint in this mode).")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
def dev_command(
    store_dir: str,
    namesrv_port: int,
    broker_port: int,
    host: str,
    metrics_port: int,
    no_metrics: bool,
    grpc_port: int,
    no_grpc: bool,
    config_file: str | None,
    console_listen: str,
    replicas: int,
    verbose: bool,
) -> None:
    """Run a NameServer and a Broker in one process, for development."""
    props: dict[str, str] = {
        "mappedFileSizeCommitLog": str(DEV_COMMIT_LOG_FILE_SIZE),
        # Idempotent sends are on in development: a retried send is never stored twice.
        "duplicateDetectionWindowSeconds": str(DEV_DUPLICATE_WINDOW_SECONDS),
    }
    user_props = read_config_file(config_file)
    props.update(user_props)
    if replicas > 1:
        from orbitmq.failover.devgroup import serve_replicas

        setup_logging(verbose)
        run(serve_replicas(host, namesrv_port, broker_port, store_dir, replicas, props))
        return
    props.update(
        {
            "listenHost": host,
            "listenPort": str(broker_port),
            "brokerIP1": host if host not in ("0.0.0.0", "::") else "",
            "storePathRootDir": os.path.abspath(store_dir),
        }
    )
    if not props["brokerIP1"]:
        del props["brokerIP1"]
    config = build_config(props, config_file)
    setup_logging(verbose)
    grpc_tls = None if "tls.server.mode" in user_props else dev_grpc_tls(config.tls)
    run(serve_dev(host, namesrv_port, config, store_dir, console_listen, None if no_metrics else metrics_port,
                  None if no_grpc else grpc_port, grpc_tls))


def dev_grpc_tls(node: TlsSettings) -> TlsSettings:
    """The gRPC port's TLS when the config file sets no `tls.server.mode`: permissive, as RocketMQ 5's
    proxy, so every official client works with its defaults (Java's TLS, Python's and Node's plain
    text); the certificate is `tls.server.certPath` or a throwaway self-signed one (test mode). Without
    the `cryptography` package a throwaway one cannot be made, and the port serves plain text only."""
    settings = dataclasses.replace(node, server_mode=TlsMode.PERMISSIVE,
                                   test_mode=node.test_mode or not node.server_cert_path)
    if not settings.server_cert_path:
        try:
            import cryptography  # noqa: F401
        except ImportError:
            log.warning("gRPC port: plain text only (a throwaway TLS certificate needs the cryptography "
                        "package; or set tls.server.certPath)")
            return dataclasses.replace(node, server_mode=TlsMode.DISABLED)
    return settings
