"""`orbitmq broker` (alias `mqbroker`), and the serving helpers `orbitmq dev` (orbitmq/dev.py) shares.

`orbitmq broker -c broker.conf [-n host:port] [--listen HOST:PORT] [--store DIR]`
runs one broker from a RocketMQ-style broker.conf; flags override the file.

It prints one stdout line per listener once bound (`metrics listening on HOST:PORT` first
when metricsExporterType=PROM, then `broker <name> listening on HOST:PORT`), logs to stderr,
stops cleanly on SIGINT/SIGTERM (exit 0), and exits with code 2 on bad flags or configuration.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from orbitmq.broker.config import BrokerConfig
from orbitmq.broker.server import Broker
from orbitmq.common.javaprops import format_properties, parse_properties
from orbitmq.errors import ConfigError
from orbitmq.remoting.loop import run

if TYPE_CHECKING:
    from orbitmq.metrics import FamilySource, MetricsServer
    from orbitmq.proxy.server import ProxyThread
    from orbitmq.remoting.local import LocalDispatch
    from orbitmq.remoting.tls import TlsSettings

log = logging.getLogger("orbitmq.broker")

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
        config = BrokerConfig.from_properties(props)
        if source is not None:
            config = dataclasses.replace(config, config_file=os.path.abspath(source))
        return config
    except ConfigError as exc:
        raise ConfigProblem(f"{source + ': ' if source else ''}{exc}") from None


def setup_logging(verbose: bool) -> None:
    """Log to stderr; stdout is kept for the readiness lines."""
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
async def stop_signals() -> AsyncIterator[asyncio.Event]:
    """An Event set by SIGINT or SIGTERM while the block runs."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


def announce(line: str) -> None:
    """One readiness line on stdout, flushed at once (tests and scripts wait for it)."""
    click.echo(line)
    sys.stdout.flush()


async def start_broker(config: BrokerConfig) -> tuple[Broker, str, int]:
    """Start a Broker; a bind failure or a bad configuration becomes a click exception (exit 1 or 2)."""
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
    announce(f"metrics listening on {server.address[0]}:{server.address[1]}")
    return server


@dataclass(frozen=True)
class MetricsPlan:
    """Where the broker's Prometheus endpoint goes, and what else it exports (`orbitmq dev`: the NameServer)."""

    host: str
    port: int
    extra_sources: Sequence[FamilySource] = ()
    any_port_if_busy: bool = False

    async def start(self, broker: Broker) -> MetricsServer:
        from orbitmq.metrics import BrokerMetrics

        return await start_metrics([BrokerMetrics(broker), *self.extra_sources], self.host, self.port,
                                   any_port_if_busy=self.any_port_if_busy)


async def run_broker_until(
    config: BrokerConfig,
    stop: asyncio.Event,
    serving: contextlib.AbstractAsyncContextManager[None] | None = None,
    metrics: MetricsPlan | None = None,
    grpc_give_way: bool = False,
    grpc_tls: TlsSettings | None = None,
) -> None:
    """Start a Broker (and its metrics endpoint), announce its address on stdout, and close it once `stop` is set.

    `serving` (`orbitmq dev`'s console) is entered once the broker listens and left before it closes.
    """
    broker, host, port = await start_broker(config)
    endpoint: MetricsServer | None = None
    proxy: ProxyThread | None = None
    try:
        if metrics is not None:
            endpoint = await metrics.start(broker)
        announce(f"broker {config.broker_name} listening on {host}:{port}")
        if config.enable_grpc_proxy:
            proxy = await start_grpc_proxy(config, grpc_give_way, grpc_tls, local=broker.local_dispatch())
        async with serving or contextlib.nullcontext():
            await stop.wait()
            log.info("broker shutting down")
    finally:
        if proxy is not None:
            await proxy.close()  # the front first: its in-process requests end before the broker closes
        if endpoint is not None:
            await endpoint.close()
        await broker.close()


async def start_grpc_proxy(config: BrokerConfig, give_way: bool = False, tls: TlsSettings | None = None,
                           local: LocalDispatch | None = None) -> ProxyThread:
    """The in-process gRPC front (enableGrpcProxy): RocketMQ 5 clients on listenHost:grpcServerPort,
    with TLS as `tls` (default: the broker's tls.* settings) says. With `local` (the broker's
    `local_dispatch()`) its requests to that broker are served in-process (local mode).

    With `give_way` (`orbitmq dev`'s default port) a port in use gives way to a free one."""
    from orbitmq.proxy.server import GrpcProxy, ProxyThread, acl_loader
    from orbitmq.proxy.tls import grpc_tls

    try:
        server_tls = grpc_tls(tls if tls is not None else config.tls)
    except ConfigError as exc:
        raise ConfigProblem(f"the gRPC port's TLS: {exc}") from None

    proxy = ProxyThread(GrpcProxy(
        list(config.namesrv_addrs), config.listen_host or "0.0.0.0", config.grpc_server_port,
        advertised_host=config.advertised_ip, acl=acl_loader(config.acl_file) if config.acl_enable else None,
        max_body_size=config.store.max_message_size, max_delay_ms=config.timer_max_delay_sec * 1000,
        give_way=give_way, ssl_context=config.tls.client_context(), tls=server_tls, local=local,
    ))
    try:
        host, port = await proxy.start()
    except OSError as exc:
        raise click.ClickException(f"cannot start the gRPC proxy on port {config.grpc_server_port}: {exc}") from None
    announce(f"proxy listening on {host}:{port}")
    return proxy


async def serve_broker(config: BrokerConfig) -> None:
    metrics = None
    if config.metrics_exporter_type == "PROM":
        metrics = MetricsPlan(config.metrics_prom_exporter_host or config.listen_host, config.metrics_prom_exporter_port)
    async with stop_signals() as stop:
        await run_broker_until(config, stop, metrics=metrics)


@click.command("broker", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("-c", "--config-file", "config_file", metavar="FILE",
              help="broker.conf with RocketMQ keys (every key of RocketMQ 4.9: docs/config-keys.md); "
              "updateBrokerConfig writes changes back to it.")
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
    setup_logging(verbose)
    config.log_ignored_keys(log)
    run(serve_broker(config))  # on uvloop when installed
