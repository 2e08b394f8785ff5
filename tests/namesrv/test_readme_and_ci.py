"""The README's NameServer command and test command are the ones that work, and CI runs the latter."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from orbitmq.namesrv.config import NamesrvConfig
from tests.support.procs import orbitmq_command

ROOT = Path(__file__).resolve().parents[2]


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_ci_runs_the_test_command_the_readme_gives() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", readme(), flags=re.DOTALL)
    commands = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    assert "./run test" in commands, "the README must give ./run test as the test command"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^\./run test\b", ci, flags=re.MULTILINE), ".ci/run must run the README's test command"
    assert re.search(r"^ORBITMQ_PURE_PYTHON=1 \./run test\b", ci, flags=re.MULTILINE), \
        ".ci/run must run the suite again on the Python twins of the compiled kernels"


def test_the_readme_namesrv_command_uses_flags_the_cli_accepts() -> None:
    lines = [line for line in readme().splitlines() if re.search(r"\borbitmq namesrv\b", line)]
    assert lines, "the README must show how to run the NameServer"
    help_text = subprocess.run(
        orbitmq_command("namesrv", "-h"), check=True, capture_output=True, text=True, timeout=30
    ).stdout
    for line in lines:
        for flag in re.findall(r"(?<![\w-])(-{1,2}[a-z][a-z-]*)", line.split("#")[0]):
            assert re.search(rf"(?<![\w-]){re.escape(flag)}\b", help_text), f"README flag {flag} unknown to the CLI"


def test_the_readme_default_namesrv_address_is_the_config_default() -> None:
    config = NamesrvConfig()
    address = f"{config.listen_host}:{config.listen_port}"
    assert any(address in line for line in readme().splitlines() if "orbitmq namesrv" in line)
