"""`mqadmin` exits as RocketMQ 4.9's tool does; `orbitmq admin` keeps OrbitMQ's 0/1/2.

RocketMQ's facts, from `MQAdminStartup.main0` and `ServerUtil.parseCmdLine` (rocketmq-all-4.9.7):
no arguments prints the command list and exits 0; an unknown sub command prints
"The sub command X not exist." and exits 0; `findSubCommand` matches names ignoring case;
a commons-cli `ParseException` (unknown flag, missing required flag) prints the help and calls
System.exit(1); an exception from `SubCommand.execute` is caught by main0, which prints its
stack trace (a `SubCommandException` "... command failed") and the JVM exits 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.admin.test_cli_errors import free_port

pytestmark = pytest.mark.timeout(60)


def _run(entry: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
    return subprocess.run([sys.executable, *entry, *args], check=False, capture_output=True, text=True,
                          timeout=40, env=env)


#: The `mqadmin` console script pyproject.toml installs next to the interpreter.
MQADMIN_SCRIPT = Path(sys.executable).parent / "mqadmin"


def mqadmin(*args: str) -> subprocess.CompletedProcess[str]:
    if MQADMIN_SCRIPT.exists():  # the installed entry point itself
        env = {k: v for k, v in os.environ.items() if k != "NAMESRV_ADDR"}
        return subprocess.run([str(MQADMIN_SCRIPT), *args], check=False, capture_output=True, text=True,
                              timeout=40, env=env)
    return _run(["-c", "from orbitmq.cli import mqadmin; mqadmin()"], *args)


def orbitmq_admin(*args: str) -> subprocess.CompletedProcess[str]:
    return _run(["-m", "orbitmq", "admin"], *args)


def test_mqadmin_without_arguments_lists_the_commands_in_rocketmq_order_and_exits_0() -> None:
    proc = mqadmin()
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0] == "The most commonly used mqadmin commands are:"
    assert lines[1].startswith("   updateTopic          ")  # `   %-20s %s`, updateTopic registered first
    assert lines[-1] == "See 'mqadmin help <command>' for more information on a specific command."


def test_mqadmin_unknown_sub_command_prints_not_exist_and_exits_0() -> None:
    proc = mqadmin("noSuchCommand", "-n", "127.0.0.1:9876")
    assert (proc.returncode, proc.stdout) == (0, "The sub command noSuchCommand not exist.\n")
    helped = mqadmin("help", "noSuchCommand")
    assert (helped.returncode, helped.stdout) == (0, "The sub command noSuchCommand not exist.\n")


def test_mqadmin_matches_command_names_ignoring_case_and_help_exits_0() -> None:
    proc = mqadmin("TOPICROUTE", "-h")
    assert proc.returncode == 0 and "mqadmin topicRoute" in proc.stdout
    helped = mqadmin("help", "topicroute")
    assert helped.returncode == 0 and "-t, --topic" in helped.stdout


@pytest.mark.parametrize("args", [
    ["topicRoute", "-n", "127.0.0.1:9876"],  # required -t missing
    ["topicRoute", "-n", "127.0.0.1:9876", "-t", "T", "-Z"],  # no such flag
    ["topicRoute", "-n", "127.0.0.1:9876", "-t"],  # flag without its value
])
def test_mqadmin_parse_errors_print_the_help_and_exit_1(args: list[str]) -> None:
    proc = mqadmin(*args)
    assert proc.returncode == 1
    assert "mqadmin topicRoute" in proc.stdout and "-t, --topic" in proc.stdout
    assert proc.stderr.startswith("error: ")


def test_mqadmin_exits_0_after_a_failed_operation_printing_the_sub_command_exception() -> None:
    addr = f"127.0.0.1:{free_port()}"
    proc = mqadmin("topicRoute", "-n", addr, "-t", "T", "--timeout", "2")
    assert proc.returncode == 0
    assert proc.stdout == ""
    first, cause = proc.stderr.splitlines()[:2]
    assert first == "org.apache.rocketmq.tools.command.SubCommandException: TopicRouteSubCommand command failed"
    assert cause.startswith("Caused by: ") and addr in cause


def test_mqadmin_bad_flag_value_is_a_failure_of_the_command_not_a_parse_error() -> None:
    # RocketMQ parses -r with Integer.parseInt inside execute(): caught by main0, exit 0.
    proc = mqadmin("updateTopic", "-n", "127.0.0.1:9876", "-t", "T", "-c", "C", "-r", "abc")
    assert proc.returncode == 0
    assert "UpdateTopicSubCommand command failed" in proc.stderr


def test_orbitmq_admin_keeps_its_own_exit_codes() -> None:
    addr = f"127.0.0.1:{free_port()}"
    failed = orbitmq_admin("topicRoute", "-n", addr, "-t", "T", "--timeout", "2")
    assert failed.returncode == 1 and failed.stderr.startswith("error: ")
    unknown = orbitmq_admin("noSuchCommand")
    assert unknown.returncode == 2 and "noSuchCommand" in unknown.stderr
    usage = orbitmq_admin("topicRoute", "-n", addr)
    assert usage.returncode == 2 and "'-t'" in usage.stderr
    helped = orbitmq_admin("topicRoute", "-h")
    assert helped.returncode == 0


@pytest.mark.parametrize("flags", [[], ["-b", "127.0.0.1:10911", "-c", "DefaultCluster"]])
def test_mqadmin_required_b_or_c_group_is_a_parse_error(flags: list[str]) -> None:
    # UpdateTopicSubCommand puts -b and -c in a required OptionGroup: none, or both, fail parsing.
    proc = mqadmin("updateTopic", "-n", "127.0.0.1:9876", "-t", "T", *flags)
    assert proc.returncode == 1
    assert "mqadmin updateTopic" in proc.stdout and proc.stderr.startswith("error: ")


def test_the_b_or_c_group_names_commands_that_take_both_flags() -> None:
    from orbitmq.admin.cli import admin_group
    from orbitmq.admin.mqadmin import ONE_OF_B_OR_C

    for name in ONE_OF_B_OR_C:
        opts = {o for p in admin_group.commands[name].params for o in getattr(p, "opts", [])}
        assert {"-b", "-c"} <= opts, name


def test_mqadmin_takes_orbitmqs_group_options_before_the_command() -> None:
    addr = f"127.0.0.1:{free_port()}"
    proc = mqadmin("--signatureVersion", "2", "-Dtls.enable=false", "topicRoute", "-n", addr, "-t", "T",
                   "--timeout", "2")
    assert proc.returncode == 0 and "TopicRouteSubCommand command failed" in proc.stderr
    bad = mqadmin("--signatureVersion", "7", "topicRoute", "-n", addr, "-t", "T")
    assert bad.returncode == 1 and bad.stderr.startswith("error: ") and "--signatureVersion" in bad.stderr
    assert mqadmin("--tls").stdout == "The sub command --tls not exist.\n"


def test_mqadmin_ignores_stray_words_as_commons_cli_does() -> None:
    proc = mqadmin("topicRoute", "-n", f"127.0.0.1:{free_port()}", "-t", "T", "stray", "--timeout", "2")
    assert proc.returncode == 0 and "TopicRouteSubCommand command failed" in proc.stderr
    assert "no NameServer answered" in proc.stderr, "it ran"
