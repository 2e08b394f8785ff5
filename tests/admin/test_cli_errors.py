"""Exit codes and messages of the admin commands when flags are bad or no NameServer answers."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest
from click.testing import CliRunner

from orbitmq.admin.cli import admin_group


def free_port() -> int:
    """A port with nothing listening on it (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(admin_group, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["updateTopic", "-n", "127.0.0.1:9876"],  # no -t
        ["updateTopic", "-n", "127.0.0.1:9876", "-t", "T"],  # neither -b nor -c
        ["updateTopic", "-n", "127.0.0.1:9876", "-t", "bad topic!", "-c", "C"],
        ["updateTopic", "-n", "127.0.0.1:9876", "-t", "T", "-c", "C", "-r", "0"],
        ["topicStatus", "-n", "not-an-address", "-t", "T"],
        ["resetOffsetByTime", "-n", "127.0.0.1:9876", "-g", "G", "-t", "T", "-s", "yesterday"],
        ["consumeMessage", "-n", "127.0.0.1:9876", "-t", "T", "-i", "1"],  # -i without -b
        ["queryMsgById", "-n", "127.0.0.1:9876", "-i", "NOT-HEX"],
        ["noSuchCommand"],
    ],
)
def test_bad_flags_exit_with_usage_code_2(args: list[str]) -> None:
    code, _, err = run(*args)
    assert code == 2, err
    assert err.strip()


def test_missing_namesrv_address_is_a_usage_error_naming_the_env_variable() -> None:
    code, _, err = run("topicList", env={"NAMESRV_ADDR": ""})
    assert code == 2
    assert "NAMESRV_ADDR" in err


def test_unreachable_namesrv_fails_with_code_1_and_one_error_line() -> None:
    addr = f"127.0.0.1:{free_port()}"
    code, out, err = run("topicList", "-n", addr, "--timeout", "2")
    assert code == 1
    assert out == ""
    assert err.startswith("error: ") and addr in err


def test_namesrv_address_is_read_from_the_environment() -> None:
    addr = f"127.0.0.1:{free_port()}"
    code, _, err = run("clusterList", "--timeout", "2", env={"NAMESRV_ADDR": addr})
    assert code == 1
    assert addr in err


def test_every_command_has_help_under_dash_h() -> None:
    for name in admin_group.commands:
        code, out, _ = run(name, "-h")
        # Controller-mode commands talk to etcd (-a), as RocketMQ 5's talk to the controller.
        flag = "-a, --controllerAddress" if name in ("getSyncStateSet", "getBrokerEpoch", "electMaster") else "-n, --namesrvAddr"
        assert code == 0 and flag in out, name


def test_mqadmin_alias_runs_the_same_commands() -> None:
    script = "from orbitmq.cli import mqadmin; mqadmin()"
    proc = subprocess.run(
        [sys.executable, "-c", script, "topicRoute", "-h"], check=False, capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 0
    assert "Usage: mqadmin topicRoute" in proc.stdout
