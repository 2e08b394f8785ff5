"""The client's modules import one way, and the typed keyword options name exactly the config fields."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from orbitmq.client import config

CLIENT = Path(__file__).resolve().parents[2] / "orbitmq" / "client"

pytestmark = pytest.mark.timeout(300)


def _client_imports(path: Path) -> set[str]:
    """The `orbitmq.client` modules a file imports anywhere (top level, functions, TYPE_CHECKING blocks)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "orbitmq.client":
                found.update(a.name for a in node.names if (CLIENT / f"{a.name}.py").exists())
            elif node.module.startswith("orbitmq.client."):
                found.add(node.module.split(".")[2])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[2] for a in node.names if a.name.startswith("orbitmq.client."))
    return found


def test_the_client_modules_import_each_other_without_a_cycle() -> None:
    graph = {p.stem: _client_imports(p) - {p.stem} for p in CLIENT.glob("*.py") if p.stem != "__init__"}
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> None:
        if module in path:
            raise AssertionError("import cycle: " + " -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, path + [module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])


def _option_names(options: type) -> set[str]:
    return set(typing.get_type_hints(options))


def test_the_typed_options_are_the_config_fields_but_the_group() -> None:
    trace = _option_names(config.TraceOptions)
    assert trace == {"enable_msg_trace", "trace_topic"}
    for options, cls in ((config.ProducerOptions, config.ProducerConfig),
                         (config.ConsumerOptions, config.ConsumerConfig)):
        fields = {f.name for f in dataclasses.fields(cls)} - {"group"}
        assert _option_names(options) - trace == fields, options.__name__
    assert _option_names(config.PushConsumerOptions) == _option_names(config.ConsumerOptions) | trace


def test_mypy_refuses_a_misspelled_or_mistyped_client_option() -> None:
    program = (
        "from orbitmq.client import Producer, PushConsumer\n"
        "Producer('PG', namesrv_adr='127.0.0.1:9876')\n"
        "PushConsumer('CG', pull_batch_size='32')\n"
        "Producer('PG', namesrv_addr='127.0.0.1:9876', enable_msg_trace=True, send_msg_timeout_ms=100)\n"
    )
    result = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "-c", program],
                            cwd=CLIENT.parents[1], capture_output=True, text=True, timeout=280, check=False)
    errors = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 2, result.stdout + result.stderr
    assert '"namesrv_adr"' in errors[0] and ":2:" in errors[0]
    assert '"pull_batch_size"' in errors[1] and ":3:" in errors[1]
