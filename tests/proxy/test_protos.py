"""The committed apache.rocketmq.v2 modules are what the .proto files give, and the .proto files
carry the field numbers, types and services of the official RocketMQ 5 client's own definitions."""

from __future__ import annotations

import filecmp
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orbitmq.proxy.pb import regen

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
PB = ROOT / "orbitmq" / "proxy" / "pb"

#: Prints every message's fields (number, type, repeated, presence, message/enum type), every
#: enum's numbers and every service method's types of the modules named on the command line.
DUMP = r"""
import importlib, json, sys
out = {}
def msg(m):
    out[m.full_name] = {f.name: [f.number, f.type, f.is_repeated, f.has_presence,
                                 f.message_type.full_name if f.message_type else None,
                                 f.enum_type.full_name if f.enum_type else None] for f in m.fields}
    for n in m.nested_types:
        msg(n)
    for e in m.enum_types:
        out[e.full_name] = sorted(v.number for v in e.values)
for name in sys.argv[1:]:
    d = importlib.import_module(name).DESCRIPTOR
    for m in d.message_types_by_name.values():
        msg(m)
    for e in d.enum_types_by_name.values():
        out[e.full_name] = sorted(v.number for v in e.values)
    for s in d.services_by_name.values():
        out[s.full_name] = {m.name: [m.input_type.full_name, m.output_type.full_name,
                                     m.client_streaming, m.server_streaming] for m in s.methods}
print(json.dumps(out, sort_keys=True))
"""


def test_committed_modules_match_regenerating_them(tmp_path: Path) -> None:
    regen.generate(tmp_path)
    fresh = tmp_path / "orbitmq" / "proxy" / "pb"
    names = sorted(p.name for p in fresh.iterdir())
    assert names, "protoc wrote nothing"
    _, mismatch, missing = filecmp.cmpfiles(fresh, PB, names, shallow=False)
    assert not mismatch and not missing, f"stale generated modules {mismatch + missing}: run ./run protos"


def _dump(home: Path, *modules: str) -> dict[str, object]:
    # HOME: importing the official client makes its log folder under ~/logs.
    done = subprocess.run(
        [sys.executable, "-c", DUMP, *modules], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
        env=dict(os.environ, HOME=str(home)),
    )
    return dict(json.loads(done.stdout))


def test_definitions_match_the_official_clients(tmp_path: Path) -> None:
    if importlib.util.find_spec("rocketmq") is None:  # not imported: its modules would clash with ours here
        pytest.skip("rocketmq-python-client is not installed (the test extra)")
    # Two processes: both define apache.rocketmq.v2.* and one descriptor pool cannot hold both.
    ours = _dump(tmp_path, "orbitmq.proxy.pb.definition_pb2", "orbitmq.proxy.pb.service_pb2")
    theirs = _dump(tmp_path, "rocketmq.grpc_protocol.definition_pb2", "rocketmq.grpc_protocol.service_pb2")
    assert ours.keys() >= theirs.keys() - {"apache.rocketmq.v2.Admin", "apache.rocketmq.v2.ChangeLogLevelRequest",
                                           "apache.rocketmq.v2.ChangeLogLevelResponse"}
    for name, shape in theirs.items():
        if name in ours:
            assert ours[name] == shape, name
