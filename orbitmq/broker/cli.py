"""`orbitmq broker` (alias `mqbroker`) and `orbitmq dev`.

`orbitmq broker -c broker.conf [-n host:port] [--listen HOST:PORT] [--store DIR]`
runs one broker from a RocketMQ-style broker.conf; flags override the file.

`orbitmq dev [--store DIR] [--namesrv-port 9876] [--broker-port 10911] [--host 127.0.0.1]
[--metrics-port 5557 | --no-metrics]` runs a NameServer and a Broker in one process (one
event loop) with the store in ./orbitmq-data unless told otherwise, and serves both
servers' Prometheus metrics on HOST:5557/metrics.

Both print one stdout line per listener once bound (`namesrv listening on
HOST:PORT`, `broker <name> listening on HOST:PORT`, `metrics listening on
HOST:PORT` when metrics are served), log to stderr, stop
cleanly on SIGINT/SIGTERM (exit 0), and exit with code 2 on bad flags or
configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING

import click

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.common.javaprops import format_properties, parse_properties
from orbitmq.console.cli import dev_console_option
from orbitmq.errors import ConfigError
from orbitmq.remoting.loop import run

if TYPE_CHECKING:
    from orbitmq.metrics import FamilySource, MetricsServer

log = logging.getLogger("orbitmq.broker")

#: `orbitmq dev` keeps CommitLog files smaller than RocketMQ's 1 GiB so a first start
#: does not pre-touch a gigabyte on a laptop; the format is the same.
DEV_COMMIT_LOG_FILE_SIZE = 128 * 1024 * 1024
#: `orbitmq dev`'s Prometheus port: RocketMQ 5's metricsPromExporterPort and rocketmq-exporter's.
DEV_METRICS_PORT = 5557


class ConfigProblem(click.ClickException):
    """A configuration the broker cannot start with; exits 2 like a usage error."""

    exit_code = 2


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]"), int(port)


def _listen_option(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, int] | None:
    if value is None:
        return None
    try:
        return parse_listen(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def read_config_file(path: str | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            return parse_properties(f.read())
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigProblem(f"cannot read config file {path}: {exc}") from None


def build_config(props: dict[str, str], source: str | None) -> BrokerConfig:
    try:
        return BrokerConfig.from_properties(props)
    except ConfigError as exc:
        raise ConfigProblem(f"{source + ': ' if source else ''}{exc}") from None


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not verbose:
        # The transport logs "... listening on HOST:PORT" too; keep stdout's readiness lines
        # the only ones of that form a reader of the merged output can see.
        logging.getLogger("orbitmq.remoting").setLevel(logging.WARNING)


@contextlib.asynccontextmanager
async def _stop_signals() -> AsyncIterator[asyncio.Event]:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def _announce(line: str) -> None:
    click.echo(line)
    sys.stdout.flush()


async def _start_broker(config: BrokerConfig) -> tuple[Broker, str, int]:
    broker = Broker(config)
    try:
        host, port = await broker.start()
    except OSError as exc:
        raise click.ClickException(
            f"cannot start broker on {config.listen_host}:{config.listen_port}: {exc.strerror or exc}"
        ) from None
    except (ConfigError, ValueError) as exc:
        raise ConfigProblem(str(exc)) from None
    return broker, host, port


async def start_metrics(
    sources: Sequence[FamilySource], host: str, port: int, *, any_port_if_busy: bool = False
) -> MetricsServer:
    """The Prometheus endpoint (metricsExporterType=PROM); announces `metrics listening on HOST:PORT`."""
    from orbitmq.metrics import serve_metrics

    try:
        server = await serve_metrics(sources, host, port, any_port_if_busy=any_port_if_busy)
    except OSError as exc:
        raise click.ClickException(f"cannot serve metrics on {host}:{port}: {exc.strerror or exc}") from None
    assert server.address is not None
    _announce(f"metrics listening on {server.address[0]}:{server.address[1]}")
    return server


async def serve_broker(config: BrokerConfig) -> None:
    async with _stop_signals() as stop:
        broker, host, port = await _start_broker(config)
        metrics: MetricsServer | None = None
        try:
            if config.metrics_exporter_type == "PROM":
                from orbitmq.metrics import BrokerMetrics

                metrics = await start_metrics(
                    [BrokerMetrics(broker)], config.metrics_prom_exporter_host or config.listen_host,
                    config.metrics_prom_exporter_port,
                )
            _announce(f"broker {config.broker_name} listening on {host}:{port}")
            await stop.wait()
            log.info("broker shutting down")
        finally:
            if metrics is not None:
                await metrics.close()
            await broker.close()


@click.command("broker", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("-c", "--config-file", "config_file", metavar="FILE", help="broker.conf with RocketMQ keys.")
@click.option("-n", "--namesrv-addr", metavar="HOST:PORT[;HOST:PORT]", help="NameServer address(es).")
@click.option("--listen", callback=_listen_option, metavar="HOST:PORT", help="Address to listen on.")
@click.option("--store", "store_dir", metavar="DIR", help="Store root folder (storePathRootDir).")
@click.option("-p", "--print-config", is_flag=True, help="Print the effective configuration and exit.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
def broker_command(
    config_file: str | None,
    namesrv_addr: str | None,
    listen: tuple[str, int] | None,
    store_dir: str | None,
    print_config: bool,
    verbose: bool,
) -> None:
    """Run a Broker (RocketMQ's mqbroker) in the foreground until SIGINT or SIGTERM."""
    props = read_config_file(config_file)
    if namesrv_addr is not None:
        props["namesrvAddr"] = namesrv_addr
    if listen is not None:
        props["listenHost"], props["listenPort"] = listen[0], str(listen[1])
    if store_dir is not None:
        props["storePathRootDir"] = store_dir
    config = build_config(props, config_file)
    if print_config:
        click.echo(format_properties(config.to_properties()), nl=False)
        return
    _setup_logging(verbose)
    run(serve_broker(config))  # on uvloop when installed


# --- orbitmq dev ---------------------------------------------------------------------


async def serve_dev(
    host: str,
    namesrv_port: int,
    broker_config: BrokerConfig,
    store_dir: str,
    console_listen: str = "off",
    metrics_port: int | None = None,
) -> None:
    from orbitmq.console.cli import dev_console
    from orbitmq.namesrv.config import NamesrvConfig
    from orbitmq.namesrv.server import NameServer

    ns_config = NamesrvConfig(
        listen_host=host,
        listen_port=namesrv_port,
        kv_config_path=os.path.join(store_dir, "namesrv", "kvConfig.json"),
        tls=broker_config.tls,  # the tls.* keys of the config file serve both ports
    )
    async with _stop_signals() as stop:
        ns = NameServer(ns_config)
        try:
            ns_host, ns_port = await ns.start()
        except OSError as exc:
            raise click.ClickException(f"cannot start namesrv on {host}:{namesrv_port}: {exc.strerror or exc}") from None
        except ConfigError as exc:
            raise ConfigProblem(str(exc)) from None
        try:
            _announce(f"namesrv listening on {ns_host}:{ns_port}")
            _announce(f"store {os.path.abspath(store_dir)}")
            config = broker_config.with_properties({"namesrvAddr": f"{ns_host}:{ns_port}"})
            broker, b_host, b_port = await _start_broker(config)
            metrics: MetricsServer | None = None
            try:
                if metrics_port is not None:  # one endpoint for both servers
                    from orbitmq.metrics import BrokerMetrics, NamesrvMetrics

                    metrics = await start_metrics(
                        [BrokerMetrics(broker), NamesrvMetrics(ns)], host, metrics_port,
                        any_port_if_busy=metrics_port == DEV_METRICS_PORT,
                    )
                _announce(f"broker {config.broker_name} listening on {b_host}:{b_port}")
                async with dev_console(console_listen, f"{ns_host}:{ns_port}", config.acl_enable, config.tls):
                    await stop.wait()
                    log.info("dev: shutting down")
            finally:
                if metrics is not None:
                    await metrics.close()
                await broker.close()
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
@click.option("-c", "--config-file", "config_file", metavar="FILE", help="Extra broker.conf settings.")
@dev_console_option
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
def dev_command(
    store_dir: str,
    namesrv_port: int,
    broker_port: int,
    host: str,
    metrics_port: int,
    no_metrics: bool,
    config_file: str | None,
    console_listen: str,
    verbose: bool,
) -> None:
    """Run a NameServer and a Broker in one process, for development."""
    props: dict[str, str] = {"mappedFileSizeCommitLog": str(DEV_COMMIT_LOG_FILE_SIZE)}
    props.update(read_config_file(config_file))
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
    _setup_logging(verbose)
    run(serve_dev(host, namesrv_port, config, store_dir, console_listen, None if no_metrics else metrics_port))
