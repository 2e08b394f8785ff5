"""`orbitmq namesrv` / `mqnamesrv` on the command line: help, config errors and exit codes."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from orbitmq.namesrv.cli import parse_listen
from orbitmq.namesrv.config import KNOWN_KEYS
from tests.support.procs import eventually, orbitmq_command, start_server

pytestmark = pytest.mark.timeout(60)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(orbitmq_command("namesrv", *args), check=False, capture_output=True, text=True, timeout=30)


def test_help_lists_the_options() -> None:
    result = run("-h")
    assert result.returncode == 0
    for option in ("-c, --config-file", "--listen HOST:PORT", "--kv-config-path", "--print-config"):
        assert option in result.stdout


def test_help_names_every_config_key() -> None:
    help_text = run("-h").stdout
    for key in KNOWN_KEYS:
        assert key in help_text


def test_mqnamesrv_alias_runs_the_same_command() -> None:
    code = "import sys; sys.argv = ['mqnamesrv', '-h']; from orbitmq.cli import mqnamesrv; mqnamesrv()"
    result = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "Usage: mqnamesrv" in result.stdout and "--listen" in result.stdout


def test_an_unknown_config_key_exits_with_code_2_naming_the_key(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.properties"
    conf.write_text("listenPort=9876\nlistenPrt=1\n")
    result = run("-c", str(conf), "--listen", "127.0.0.1:0")
    assert result.returncode == 2
    assert "listenPrt" in result.stderr
    assert result.stdout == ""


def test_an_unreadable_config_file_exits_with_code_2(tmp_path: Path) -> None:
    result = run("-c", str(tmp_path / "missing.properties"))
    assert result.returncode == 2
    assert "cannot read config file" in result.stderr


def test_a_bad_listen_address_exits_with_code_2() -> None:
    result = run("--listen", "nowhere")
    assert result.returncode == 2
    assert "HOST:PORT" in result.stderr


def test_an_unknown_flag_exits_with_code_2() -> None:
    assert run("--no-such-flag").returncode == 2


def test_print_config_shows_file_values_overridden_by_flags(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.properties"
    conf.write_text("listenPort=19876\norderMessageEnable=true\nkvConfigPath=/from/file.json\n")
    result = run("-c", str(conf), "--kv-config-path", str(tmp_path / "kv.json"), "-p")
    assert result.returncode == 0
    lines = set(result.stdout.splitlines())
    assert {"listenPort=19876", "orderMessageEnable=true", f"kvConfigPath={tmp_path / 'kv.json'}"} <= lines


def test_listen_port_from_the_config_file_is_used(tmp_path: Path) -> None:
    with socket.socket() as s:  # find a free port; tiny race accepted for this one test
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"listenHost=127.0.0.1\nlistenPort={port}\nkvConfigPath={tmp_path / 'kv.json'}\n")
    server = start_server(orbitmq_command("namesrv", "-c", str(conf)))
    try:
        assert server.addr == f"127.0.0.1:{port}"
        # stderr is merged into the output, and log lines arrive in any order with the ready line.
        eventually(lambda: f"namesrv listening on 127.0.0.1:{port}\n" in server.output, timeout=10)
    finally:
        assert server.stop() == 0


def test_netty_tuning_keys_are_accepted_with_a_warning(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.properties"
    conf.write_text(f"serverWorkerThreads=8\nkvConfigPath={tmp_path / 'kv.json'}\n")
    server = start_server(orbitmq_command("namesrv", "-c", str(conf), "--listen", "127.0.0.1:0"))
    try:
        eventually(lambda: any("serverWorkerThreads=8 has no effect" in line for line in server.output), timeout=10)
    finally:
        server.stop()


def test_listen_addresses_parse_with_ipv6_brackets() -> None:
    assert parse_listen("0.0.0.0:9876") == ("0.0.0.0", 9876)
    assert parse_listen("[::1]:9876") == ("::1", 9876)
    for bad in ("9876", ":9876", "host:", "host:port", "host:70000"):
        with pytest.raises(ValueError):
            parse_listen(bad)
