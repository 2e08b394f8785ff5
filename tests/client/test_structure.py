"""The client's modules import one way, and the typed keyword options name exactly the config fields."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

from orbitmq.client import config

CLIENT = Path(__file__).resolve().parents[2] / "orbitmq" / "client"


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
