"""`orbitmq namesrv` (alias `mqnamesrv`): run a NameServer in the foreground.

Settings come from RocketMQ's defaults, then the `-c` properties file, then
the flags. Logs go to stderr; stdout carries exactly one line,
`namesrv listening on HOST:PORT`, once the socket is bound, so scripts can
wait for it. SIGINT and SIGTERM stop the server cleanly (exit 0). Bad flags,
an unreadable config file or an unknown key exit with code 2.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from dataclasses import replace

import click

from orbitmq.common.javaprops import parse_properties
from orbitmq.common.keycatalog import NAMESRV_KEYS
from orbitmq.errors import ConfigError
from orbitmq.namesrv.config import NamesrvConfig, format_properties
from orbitmq.namesrv.server import NameServer
from orbitmq.remoting.loop import run

log = logging.getLogger("orbitmq.namesrv")


class ConfigProblem(click.ClickException):
    """A configuration the server cannot start with; exits 2 like a usage error."""

    exit_code = 2


def parse_listen(value: str) -> tuple[str, int]:
    """`HOST:PORT` (IPv6 hosts in brackets) -> (host, port); raises ValueError."""
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


def load_config(
    config_file: str | None, listen: tuple[str, int] | None, kv_config_path: str | None
) -> NamesrvConfig:
    """Defaults, then the properties file, then flags; raises ConfigProblem with a clear message."""
    props: dict[str, str] = {}
    if config_file is not None:
        try:
            with open(config_file, encoding="utf-8") as f:
                props = parse_properties(f.read())
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigProblem(f"cannot read config file {config_file}: {exc}") from None
        except ConfigError as exc:
            raise ConfigProblem(f"{config_file}: {exc}") from None
    if listen is not None:
        props["listenHost"], props["listenPort"] = listen[0], str(listen[1])
    if kv_config_path is not None:
        props["kvConfigPath"] = kv_config_path
    try:
        config = NamesrvConfig.from_properties(props)
        return replace(config, config_file=os.path.abspath(config_file)) if config_file else config
    except ConfigError as exc:
        where = f"{config_file}: " if config_file else ""
        raise ConfigProblem(f"{where}{exc}") from None


async def serve(config: NamesrvConfig) -> None:
    """Run a NameServer until SIGINT or SIGTERM; prints the readiness line once bound."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    ns = NameServer(config)
    try:
        host, port = await ns.start()
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on {config.listen_host}:{config.listen_port}: {exc.strerror or exc}"
        ) from None
    except ConfigError as exc:
        raise ConfigProblem(str(exc)) from None
    metrics = None
    try:
        if config.metrics_exporter_type == "PROM":
            from orbitmq.metrics import NamesrvMetrics, serve_metrics

            m_host = config.metrics_prom_exporter_host or config.listen_host
            try:
                metrics = await serve_metrics([NamesrvMetrics(ns)], m_host, config.metrics_prom_exporter_port)
            except OSError as exc:
                raise click.ClickException(
                    f"cannot serve metrics on {m_host}:{config.metrics_prom_exporter_port}: {exc.strerror or exc}"
                ) from None
            assert metrics.address is not None
            click.echo(f"metrics listening on {metrics.address[0]}:{metrics.address[1]}")
        click.echo(f"namesrv listening on {host}:{port}")
        sys.stdout.flush()
        await stop.wait()
        log.info("namesrv shutting down")
    finally:
        if metrics is not None:
            await metrics.close()
        await ns.close()


_EPILOG = """\b
Config file keys (RocketMQ's names; durations in ms):
  listenHost, listenPort, serverSocketBacklog (1024), kvConfigPath, orderMessageEnable,
  scanNotActiveBrokerInterval (10000), brokerChannelExpiredTime (120000),
  maxFrameLength, remotingMemoryBudget (bytes, 268435456), configStorePath
  (where updateNamesrvConfig writes the configuration back; default the -c file).
Metrics: metricsExporterType=PROM serves /metrics on metricsPromExporterHost
  (default listenHost):metricsPromExporterPort (default 5557).
OrbitMQ's own: aclEnable (writes need an admin account of aclConfigPath,
  a plain_acl.yml; default next to kvConfigPath).
RocketMQ's TLS keys: tls.server.mode (disabled|permissive|enforcing),
  tls.server.certPath, tls.server.keyPath, tls.server.need.client.auth,
  tls.server.trustCertPath, tls.config.file, ... (docs/tls.md).
RocketMQ's other keys (serverWorkerThreads, rocketmqHome, ...) are accepted and
logged as having no effect (docs/config-keys.md); any other key is an error."""


@click.command(
    "namesrv",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog=_EPILOG,
)
@click.option(
    "-c", "--config-file", "config_file", metavar="FILE",
    help="namesrv.properties with RocketMQ keys (listenPort, kvConfigPath, orderMessageEnable, ...).",
)
@click.option(
    "--listen", callback=_listen_option, metavar="HOST:PORT",
    help="Address to listen on (default 0.0.0.0:9876, or listenHost/listenPort from the file).",
)
@click.option("--kv-config-path", metavar="FILE", help="Where the KV config is kept (default ~/namesrv/kvConfig.json).")
@click.option("-p", "--print-config", is_flag=True, help="Print the effective configuration and exit.")
def namesrv_command(
    config_file: str | None, listen: tuple[str, int] | None, kv_config_path: str | None, print_config: bool
) -> None:
    """Run a NameServer (RocketMQ's mqnamesrv) in the foreground until SIGINT or SIGTERM."""
    config = load_config(config_file, listen, kv_config_path)
    if print_config:
        click.echo(format_properties(config.to_properties()), nl=False)
        return
    logging.basicConfig(
        stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    for key, value in config.rocketmq_only:
        log.warning("config key %s=%s has no effect in OrbitMQ: %s", key, value, NAMESRV_KEYS[key].ignored)
    run(serve(config))  # on uvloop when installed
