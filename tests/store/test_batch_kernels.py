"""The compiled batch-append kernel and its Python original agree byte for byte, on good and bad input."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orbitmq import speedups
from orbitmq.client.batch import encode_batch
from orbitmq.client.message import Message
from orbitmq.common import properties as mc
from orbitmq.common.record import iter_records
from orbitmq.store import batch_records

compiled = speedups.compiled
needs_compiled = pytest.mark.skipif(compiled is None, reason="ORBITMQ_PURE_PYTHON is set")

TOPIC = b"BatchTopic"
FIELD = bytes((len(TOPIC),)) + TOPIC
FIXED = 88 + len(FIELD) + 2
HOSTS = {"born_ts": 1_700_000_000_000, "born_ip": b"\x7f\x00\x00\x01", "born_port": 52311,
         "store_ts": 1_700_000_000_123, "store_ip": b"\x0a\x00\x00\x02", "store_port": 10911}


def _run(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except (ValueError, TypeError) as exc:
        return type(exc).__name__, exc.args


def _write(impl: Any, body: bytes, extra: bytes, pos: int = 16, size: int = 1 << 16) -> tuple[tuple[str, Any], bytes]:
    buf = bytearray(b"\xee" * size)
    outcome = _run(impl.write_batch_v4, memoryview(buf), pos, body, extra, FIELD, FIXED, mc.MAX_PROPERTIES_BYTES,
                   3, 1000, 5_000_000, 0, *HOSTS.values())
    return outcome, bytes(buf)


property_text = st.text(alphabet=st.characters(blacklist_characters="\x01\x02", blacklist_categories=("Cs",)),
                        max_size=12)


@st.composite
def messages(draw: st.DrawFn) -> list[Message]:
    msgs = []
    for _ in range(draw(st.integers(1, 6))):
        msg = Message("BatchTopic", draw(st.binary(max_size=300)), flag=draw(st.integers(-2**31, 2**31 - 1)))
        if draw(st.booleans()):
            msg.tags = draw(property_text) or None
        if draw(st.booleans()):
            msg.keys = draw(st.lists(property_text.filter(lambda s: " " not in s and s), max_size=3))
        if draw(st.booleans()):
            msg.unique_key = draw(property_text) or None
        for name, value in draw(st.dictionaries(property_text.filter(bool), property_text.filter(bool), max_size=3)).items():
            msg.properties[name] = value
        msgs.append(msg)
    return msgs


extras = st.sampled_from([b"", b"WAIT\x01true", b"TAGS\x01fromBatch", b"\x02", b"KEYS\x01a b\x02UNIQ_KEY\x01X"])


@needs_compiled
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages(), extras)
def test_well_formed_batches_are_written_identically(msgs: list[Message], extra: bytes) -> None:
    body = b"".join(encode_batch(msgs))
    assert _run(compiled.plan_batch, body, extra, FIXED, mc.MAX_PROPERTIES_BYTES) == \
        _run(batch_records.plan_batch, body, extra, FIXED, mc.MAX_PROPERTIES_BYTES)
    assert _write(compiled, body, extra) == _write(batch_records, body, extra)


@needs_compiled
@settings(max_examples=400, deadline=None)
@given(messages(), extras, st.data())
def test_damaged_batches_are_refused_identically_and_nothing_is_written(
    msgs: list[Message], extra: bytes, data: st.DataObject
) -> None:
    body = bytearray(b"".join(encode_batch(msgs)))
    for _ in range(data.draw(st.integers(1, 4))):
        action = data.draw(st.sampled_from(["flip", "cut", "grow"]))
        if action == "flip" and body:
            i = data.draw(st.integers(0, len(body) - 1))
            body[i] = data.draw(st.integers(0, 255))
        elif action == "cut" and body:
            del body[data.draw(st.integers(0, len(body) - 1)):]
        else:
            body += data.draw(st.binary(min_size=1, max_size=30))
    c_outcome, c_buf = _write(compiled, bytes(body), extra)
    py_outcome, py_buf = _write(batch_records, bytes(body), extra)
    assert c_outcome == py_outcome and c_buf == py_buf
    if c_outcome[0] != "ok":
        assert c_buf == b"\xee" * len(c_buf)


@needs_compiled
@pytest.mark.parametrize("pos, size", [(-1, 4096), (4000, 4096), (0, 10)])
def test_a_batch_that_does_not_fit_its_buffer_is_refused_by_both(pos: int, size: int) -> None:
    body = b"".join(encode_batch([Message("BatchTopic", b"x" * 200)]))
    for impl in (compiled, batch_records):
        outcome, buf = _write(impl, body, b"", pos=pos, size=size)
        assert outcome == ("ValueError", ("MESSAGE_ILLEGAL", "the batch does not fit where it was to be written"))
        assert buf == b"\xee" * size


def test_the_records_decode_as_the_messages_that_were_sent() -> None:
    msgs = [Message("BatchTopic", f"body {i}".encode(), tags="T", keys=["k1", "k2"]) for i in range(3)]
    for i, m in enumerate(msgs):
        m.unique_key = f"UNIQ{i}"
    body = b"".join(encode_batch(msgs))
    outcome, buf = _write(batch_records, body, b"WAIT\x01true", pos=0)
    assert outcome[0] == "ok"
    rows = outcome[1]
    assert [r[2:] for r in rows] == [("k1 k2", f"UNIQ{i}") for i in range(3)]
    records = list(iter_records(buf[: sum(r[0] for r in rows)]))
    assert [(r.body, r.topic, r.queue_offset, r.queue_id, r.tags, r.properties.get("WAIT")) for r in records] == \
        [(m.body, "BatchTopic", 1000 + i, 3, "T", "true") for i, m in enumerate(msgs)]
    assert [r.commit_log_offset for r in records] == [5_000_000 + sum(x[0] for x in rows[:i]) for i in range(3)]
    assert struct.unpack_from(">i", buf, 0)[0] == rows[0][0]


def test_the_compiled_kernels_are_built_unless_python_is_forced() -> None:
    """A clean install builds orbitmq._speedups (the project's ./run installs gcc and zlib's headers)."""
    if speedups.PURE_PYTHON:
        assert speedups.compiled is None
    else:
        assert speedups.compiled is not None, "orbitmq._speedups did not build: is a C compiler installed?"


def test_orbitmq_pure_python_switches_the_kernels_off() -> None:
    code = "from orbitmq.store import kernels; print(kernels.IMPLEMENTATION)"
    env = dict(os.environ, ORBITMQ_PURE_PYTHON="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "python"
