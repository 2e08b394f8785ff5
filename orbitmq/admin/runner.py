"""How every admin command runs: the `-n` option, one AdminClient, and the exit-code policy.

Exit codes of `orbitmq admin` (the same for every command; the `mqadmin` entry point
maps these to RocketMQ 4.9's codes, see `orbitmq.admin.mqadmin`):

* 0 — the command did what it says.
* 1 — the operation failed: no NameServer or broker answered, a peer refused
  (the RocketMQ response code and remark are printed), or nothing matched.
* 2 — usage error: unknown command, missing or malformed flag (click's own
  convention, also used for values we reject before sending anything).

Errors go to stderr as one `error: ...` line; results go to stdout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click

from orbitmq.admin.api import AdminClient
from orbitmq.errors import BrokerError, OrbitMQError

F = TypeVar("F", bound=Callable[..., Any])

EXIT_FAILED = 1
EXIT_USAGE = 2

NAMESRV_ENV = "NAMESRV_ADDR"


def namesrv_option(func: F) -> F:
    """`-n / --namesrvAddr host:port[;host:port]`, defaulting to $NAMESRV_ADDR as mqadmin does."""
    return click.option(
        "-n",
        "--namesrvAddr",
        "namesrv",
        metavar="HOST:PORT[;HOST:PORT]",
        envvar=NAMESRV_ENV,
        show_envvar=True,
        help="NameServer address list, separated by ';'.",
    )(func)


def timeout_option(func: F) -> F:
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0.1),
        default=5.0,
        show_default=True,
        help="Seconds to wait for each request.",
    )(func)


class OperationFailed(click.ClickException):
    """An admin operation failed: message on stderr, exit code 1."""

    exit_code = EXIT_FAILED

    def show(self, file: Any = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def split_namesrv(namesrv: str | None) -> list[str]:
    if not namesrv:
        raise click.UsageError(f"no NameServer address: pass -n host:port or set {NAMESRV_ENV}")
    addrs = [a.strip() for a in namesrv.replace(",", ";").split(";") if a.strip()]
    for addr in addrs:
        host, sep, port = addr.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise click.BadParameter(f"{addr!r} is not host:port", param_hint="'-n' / '--namesrvAddr'")
    return addrs


def run_admin(
    namesrv: str | None, timeout: float, action: Callable[[AdminClient], Awaitable[None]]
) -> None:
    """Run `action` with a connected AdminClient; map failures to exit code 1."""
    addrs = split_namesrv(namesrv)

    async def main() -> None:
        async with AdminClient(addrs, timeout=timeout) as admin:
            await action(admin)

    try:
        asyncio.run(main())
    except BrokerError as exc:
        raise OperationFailed(f"CODE: {exc.code} DESC: {exc.remark}") from exc
    except OrbitMQError as exc:
        raise OperationFailed(str(exc) or type(exc).__name__) from exc
    except OSError as exc:
        # Resolver and socket errors not wrapped by the transport.
        raise OperationFailed(str(exc)) from exc

