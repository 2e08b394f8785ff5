"""The `orbitmq` command and the RocketMQ-style aliases `mqnamesrv`, `mqbroker`, `mqadmin`.

Each subcommand lives with the part it runs (`orbitmq/namesrv/cli.py`,
`orbitmq/broker/cli.py`, `orbitmq/admin/cli.py`; `orbitmq/dev.py` composes
the first two) and is imported only when used, so `orbitmq admin ...` does
not pay for loading the broker.
"""

from __future__ import annotations

import importlib
import sys

import click

from orbitmq import __version__

# subcommand name -> "module:attribute" of a click.Command
_SUBCOMMANDS: dict[str, str] = {
    "namesrv": "orbitmq.namesrv.cli:namesrv_command",
    "broker": "orbitmq.broker.cli:broker_command",
    "dev": "orbitmq.dev:dev_command",
    "admin": "orbitmq.admin.cli:admin_group",
    "console": "orbitmq.console.cli:console_command",
    "proxy": "orbitmq.proxy.server:proxy_command",
}

# One-line summaries for `orbitmq --help`, so listing commands imports nothing.
_SUMMARIES: dict[str, str] = {
    "namesrv": "Run a NameServer (RocketMQ's mqnamesrv).",
    "broker": "Run a Broker from a broker.conf (RocketMQ's mqbroker).",
    "dev": "Run a NameServer and a Broker in one process, store in ./orbitmq-data.",
    "admin": "Administer topics, groups, brokers and messages (RocketMQ's mqadmin).",
    "console": "Run the web console (127.0.0.1:8080) over the admin API.",
    "proxy": "Serve RocketMQ 5 gRPC clients (port 8081) in front of a NameServer's brokers.",
}


def _load(target: str) -> click.Command:
    module_name, attr = target.split(":")
    command = getattr(importlib.import_module(module_name), attr)
    assert isinstance(command, click.Command)
    return command


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = _SUBCOMMANDS.get(cmd_name)
        return _load(target) if target else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, _SUMMARIES[name]) for name in self.list_commands(ctx)])


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="orbitmq")
def cli() -> None:
    """OrbitMQ: a message queue that speaks RocketMQ's protocol."""


def main() -> None:
    cli(prog_name="orbitmq")


def _alias(name: str, target: str) -> None:
    _load(target).main(args=sys.argv[1:], prog_name=name)


def mqnamesrv() -> None:
    _alias("mqnamesrv", _SUBCOMMANDS["namesrv"])


def mqbroker() -> None:
    _alias("mqbroker", _SUBCOMMANDS["broker"])


def mqadmin() -> None:
    """`mqadmin`: the admin commands with RocketMQ 4.9's dispatch and exit codes (orbitmq.admin.mqadmin)."""
    from orbitmq.admin.mqadmin import main as mqadmin_main

    mqadmin_main()


if __name__ == "__main__":
    main()
