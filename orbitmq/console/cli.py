"""`orbitmq console`: the web console on HOST:PORT (127.0.0.1:8080 by default).

Prints `console listening on HOST:PORT` once bound, logs to stderr, stops
cleanly on SIGINT/SIGTERM and exits 2 on bad flags.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import ssl
import sys
from collections.abc import AsyncIterator

import click

from orbitmq.admin.runner import NAMESRV_ENV, split_namesrv
from orbitmq.client.acl import AclCredentials
from orbitmq.errors import ConfigError
from orbitmq.remoting.loop import run
from orbitmq.remoting.tls import TlsMode, TlsSettings

DEFAULT_LISTEN = "127.0.0.1:8080"


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter(f"expected HOST:PORT, got {value!r}", param_hint="'--listen'")
    return host.strip("[]"), int(port)


def https_context(tls: TlsSettings | None) -> ssl.SSLContext | None:
    """The console's HTTPS context: the tls.server.* settings when tls.server.mode is not disabled
    (permissive serves HTTPS too: one port cannot tell HTTP from TLS here), else None (plain HTTP)."""
    if tls is None or tls.server_mode is TlsMode.DISABLED:
        return None
    try:
        return tls.server_context()
    except ConfigError as exc:
        raise click.ClickException(f"console HTTPS: {exc}") from None


async def _serve(addrs: list[str], host: str, port: int, login: bool, creds: AclCredentials | None,
                 timeout: float, ssl_context: ssl.SSLContext | None = None) -> None:
    from orbitmq.console.app import ConsoleSettings, start_console

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        runner, bound_host, bound_port = await start_console(
            ConsoleSettings(addrs, login=login, credentials=creds, timeout=timeout), host, port, ssl_context)
    except OSError as exc:
        raise click.ClickException(f"cannot start console on {host}:{port}: {exc.strerror or exc}") from None
    try:
        click.echo(f"console listening on {bound_host}:{bound_port}")
        sys.stdout.flush()
        await stop.wait()
    finally:
        await runner.cleanup()


@click.command("console", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("-n", "--namesrv", metavar="HOST:PORT[;HOST:PORT]", envvar=NAMESRV_ENV, show_envvar=True,
              default="127.0.0.1:9876", show_default=True, help="NameServer address list.")
@click.option("--listen", default=DEFAULT_LISTEN, show_default=True, metavar="HOST:PORT",
              help="Address the console serves on.")
@click.option("--login", is_flag=True,
              help="Require a login with a plain-ACL account; requests are signed with its keys.")
@click.option("--accessKey", "access_key", envvar="ORBITMQ_ACCESS_KEY",
              help="Sign every request with this account (without --login; env ORBITMQ_ACCESS_KEY).")
@click.option("--secretKey", "secret_key", envvar="ORBITMQ_SECRET_KEY",
              help="Secret key of --accessKey (env ORBITMQ_SECRET_KEY).")
@click.option("--tls", "use_tls", is_flag=True, help="Connect to NameServers and brokers with TLS.")
@click.option("--tlsConfigFile", "tls_config_file", metavar="FILE",
              help="Properties file of tls.* client settings (tls.config.file); implies --tls.")
@click.option("-D", "tls_props", multiple=True, metavar="KEY=VALUE",
              help="A tls.* setting, e.g. -D tls.client.trustCertPath=ca.pem; implies --tls. With "
                   "-D tls.server.mode=enforcing (and tls.server.* keys) the console serves HTTPS.")
@click.option("--timeout", type=click.FloatRange(min=0.1), default=5.0, show_default=True,
              help="Seconds to wait for each admin request.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logging.")
def console_command(namesrv: str, listen: str, login: bool, access_key: str | None, secret_key: str | None,
                    use_tls: bool, tls_config_file: str | None, tls_props: tuple[str, ...], timeout: float,
                    verbose: bool) -> None:
    """Run the web console (cluster, topics, groups, messages, producers, dead letters, ACL) over the admin API."""
    from orbitmq.admin.api import set_default_tls
    from orbitmq.admin.cli import tls_option_settings

    addrs = split_namesrv(namesrv)
    # Every AdminClient of the console (its own and each login's) connects with these settings.
    tls = tls_option_settings(use_tls, tls_config_file, tls_props)
    set_default_tls(tls)
    host, port = parse_listen(listen)
    if bool(access_key) != bool(secret_key):
        raise click.UsageError("give both --accessKey and --secretKey, or neither")
    if login and access_key:
        raise click.UsageError("--login and --accessKey exclude each other")
    creds = AclCredentials(access_key, secret_key) if access_key and secret_key else None
    logging.basicConfig(stream=sys.stderr, level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    run(_serve(addrs, host, port, login, creds, timeout, https_context(tls)))


# --- the console inside `orbitmq dev` ---------------------------------------------------


def dev_console_option(func):  # type: ignore[no-untyped-def]
    """`orbitmq dev --console HOST:PORT|off` (127.0.0.1:8080 by default)."""
    def check(ctx: click.Context, param: click.Parameter, value: str) -> str:
        if value.strip().lower() != "off":
            parse_listen(value)  # a bad address is a usage error before any server starts
        return value

    return click.option(
        "--console", "console_listen", default=DEFAULT_LISTEN, show_default=True, metavar="HOST:PORT|off",
        callback=check, help="Where the web console serves ('off': no console).",
    )(func)


@contextlib.asynccontextmanager
async def dev_console(listen: str, namesrv_addr: str, login: bool, tls: TlsSettings | None = None) -> AsyncIterator[None]:
    """Serve the console for `orbitmq dev` while the block runs; prints `console listening on HOST:PORT`.

    `login` when the broker has ACL on; `tls`: the broker's own client TLS settings when it
    connects with TLS (tls.enable), so the console reaches a TLS-only dev cluster too.

    Nothing is served when `listen` is 'off', or when the port is taken (a
    warning on stderr: the NameServer and broker run on without a console).
    """
    if listen.strip().lower() == "off":
        yield
        return
    from orbitmq.console.app import ConsoleSettings, start_console

    host, port = parse_listen(listen)
    try:
        settings = ConsoleSettings([namesrv_addr], login=login, tls=tls if tls is not None and tls.enable else None)
        # The console's own port follows the servers' tls.server.mode, like every other port of dev.
        runner, bound_host, bound_port = await start_console(settings, host, port, https_context(tls))
    except OSError as exc:
        click.echo(f"warning: console not started on {host}:{port}: {exc.strerror or exc}", err=True)
        yield
        return
    try:
        click.echo(f"console listening on {bound_host}:{bound_port}")
        sys.stdout.flush()
        yield
    finally:
        await runner.cleanup()
