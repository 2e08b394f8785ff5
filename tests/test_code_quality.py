"""The package stays typed and lint-clean: mypy and ruff run as part of the suite (style.md §8)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.timeout(300)


def run_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=280, check=False)


def test_the_package_type_checks_with_mypy() -> None:
    result = run_tool("mypy", "orbitmq")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_code_passes_ruff() -> None:
    result = run_tool("ruff", "check", "orbitmq", "tests", "bench", "examples")
    assert result.returncode == 0, result.stdout + result.stderr
