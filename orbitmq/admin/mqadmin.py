"""The `mqadmin` entry point: RocketMQ 4.9's `MQAdminStartup.main0` dispatch and exit codes.

`orbitmq admin NAME ...` keeps OrbitMQ's exit codes (0 done, 1 failed, 2 usage error).
`mqadmin NAME ...` runs the same click commands but answers as RocketMQ 4.9's tool does,
so that scripts written for it run unchanged:

* no arguments: the command list ("The most commonly used mqadmin commands are:"), exit 0;
* `help NAME`: that command's help, or "The sub command NAME not exist.", exit 0;
* an unknown command: "The sub command NAME not exist." on stdout, exit 0;
* command names match case-insensitively (`findSubCommand` uses `equalsIgnoreCase`);
* `-h`: the command's help, exit 0; words that are no flag are ignored (PosixParser);
* a flag the command does not have, a missing required flag or a flag without its value
  (commons-cli's `ParseException` in `ServerUtil.parseCmdLine`): the command's help on
  stdout, exit 1 (OrbitMQ also names the fault on stderr);
* anything that goes wrong once the command runs (a bad flag value, no NameServer, a refusal):
  `main0` catches it and prints the stack trace: here the `SubCommandException` line and its
  cause on stderr, exit 0.

OrbitMQ's group options (`--accessKey`, `--tls`, `-D`, ...) may come before the command name.
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Sequence

import click

from orbitmq.admin.cli import admin_group
from orbitmq.admin.registry import ROCKETMQ_COMMANDS

#: Exit code after a usage error (`ServerUtil.parseCmdLine`: System.exit(1)).
EXIT_PARSE_ERROR = 1

#: Group options that take a value, and flag-only group options.
_GROUP_VALUE_OPTIONS = ("--accessKey", "--secretKey", "--signatureVersion", "--tlsConfigFile", "-D")
_GROUP_FLAGS = ("--tls",)

_JAVA_CLASSES = {c.orbitmq: c.java_class for c in ROCKETMQ_COMMANDS if c.orbitmq}

_PARSE_ERRORS = (click.NoSuchOption, click.BadOptionUsage, click.MissingParameter, click.BadArgumentUsage)

#: Commands whose `-b` and `-c` form a required commons-cli OptionGroup: exactly one must be
#: given, or parsing fails (MissingOptionException / AlreadySelectedException) and mqadmin exits 1.
ONE_OF_B_OR_C = frozenset({
    "updateTopic", "updateAclConfig", "deleteAclConfig", "deleteAccessConfig", "updateGlobalWhiteAddr",
    "clusterAclConfigVersion",
})


def command_order() -> list[str]:
    """RocketMQ's registration order first (as `printHelp` lists them), then OrbitMQ's own."""
    registered = [c.orbitmq for c in ROCKETMQ_COMMANDS if c.registered and c.orbitmq in admin_group.commands]
    listed = set(registered)
    return [name for name in registered if name] + sorted(n for n in admin_group.commands if n not in listed)


def find_command(name: str) -> click.Command | None:
    """`MQAdminStartup.findSubCommand`: the command whose name equals `name` ignoring case."""
    exact = admin_group.commands.get(name)
    if exact is not None:
        return exact
    folded = name.lower()
    for command_name, command in admin_group.commands.items():
        if command_name.lower() == folded:
            return command
    return None


def print_command_list() -> None:
    click.echo("The most commonly used mqadmin commands are:")
    for name in command_order():
        command = admin_group.commands[name]
        click.echo(f"   {name:<20} {command.get_short_help_str(limit=90)}")
    click.echo("")
    click.echo("See 'mqadmin help <command>' for more information on a specific command.")


def _split_group_options(args: list[str]) -> tuple[list[str], list[str]]:
    """Leading OrbitMQ group options, and the rest (command name first)."""
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if name in _GROUP_FLAGS:
            i += 1
        elif name in _GROUP_VALUE_OPTIONS:
            i += 1 if "=" in arg or (name == "-D" and len(arg) > 2) else 2
        elif arg.startswith("-D") and len(arg) > 2:
            i += 1
        else:
            break
    return args[:i], args[i:]


def _group_context(group_args: list[str]) -> click.Context:
    # The group's options only (the command name was taken off): no help for "no arguments".
    group = copy.copy(admin_group)
    group.no_args_is_help = False
    ctx = group.make_context("mqadmin", list(group_args))
    ctx.invoke(admin_group.callback, **ctx.params)  # type: ignore[arg-type]
    return ctx


def _failure_text(command_name: str, exc: BaseException) -> str:
    java = _JAVA_CLASSES.get(command_name, command_name)
    if isinstance(exc, click.ClickException):
        cause = exc.format_message()
    else:
        cause = str(exc) or type(exc).__name__
    return (f"org.apache.rocketmq.tools.command.SubCommandException: {java} command failed\n"
            f"Caused by: {cause}")


def run(argv: Sequence[str]) -> int:
    """Run `mqadmin` with `argv` (without the program name); return the process exit code."""
    group_args, args = _split_group_options(list(argv))
    if not args:
        if group_args:
            click.echo(f"The sub command {group_args[0]} not exist.")
        else:
            print_command_list()
        return 0
    if len(args) == 2 and args[0] == "help":
        command = find_command(args[1])
        if command is None:
            click.echo(f"The sub command {args[1]} not exist.")
            return 0
        with click.Context(command, info_name=f"mqadmin {command.name}") as ctx:
            click.echo(command.get_help(ctx))
        return 0
    command = find_command(args[0])
    if command is None:
        click.echo(f"The sub command {args[0]} not exist.")
        return 0
    try:
        parent = _group_context(group_args)
    except click.ClickException as exc:
        click.echo(f"error: {exc.format_message()}", err=True)
        return EXIT_PARSE_ERROR
    except click.exceptions.Exit as exc:
        return exc.exit_code
    with parent:
        return _run_command(command, args[1:], parent)


def _option_group_fault(command: click.Command, ctx: click.Context) -> str:
    """Why the command's required `-b`/`-c` group is not satisfied ("" when it is)."""
    if command.name not in ONE_OF_B_OR_C:
        return ""
    given = [
        opt for p in command.params if isinstance(p, click.Option) and p.name is not None
        for opt in p.opts if opt in ("-b", "-c")
        if ctx.get_parameter_source(p.name) == click.core.ParameterSource.COMMANDLINE
    ]
    if len(given) == 1:
        return ""
    if not given:
        return "Missing a required option from the group: -b or -c"
    return "give only one of -b and -c"


def _run_command(command: click.Command, args: list[str], parent: click.Context) -> int:
    name = command.name or ""
    try:
        # commons-cli's PosixParser keeps words that are no option aside: the command runs anyway.
        ctx = command.make_context(name, args, parent=parent, allow_extra_args=True)
    except click.exceptions.Exit as exc:  # -h
        return exc.exit_code
    except _PARSE_ERRORS as exc:
        with click.Context(command, info_name=name, parent=parent) as help_ctx:
            click.echo(command.get_help(help_ctx))
        click.echo(f"error: {exc.format_message()}", err=True)
        return EXIT_PARSE_ERROR
    except click.ClickException as exc:  # a value of the wrong form: RocketMQ finds it while running
        click.echo(_failure_text(name, exc), err=True)
        return 0
    group_fault = _option_group_fault(command, ctx)
    if group_fault:
        click.echo(command.get_help(ctx))
        click.echo(f"error: {group_fault}", err=True)
        return EXIT_PARSE_ERROR
    try:
        with ctx:
            command.invoke(ctx)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("Aborted!", err=True)
        return 1
    except (click.ClickException, Exception) as exc:  # noqa: BLE001 - main0 catches every Exception
        click.echo(_failure_text(name, exc), err=True)
        return 0
    return 0


def main() -> None:
    sys.exit(run(sys.argv[1:]))
