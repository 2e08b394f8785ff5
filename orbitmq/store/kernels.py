"""The store's hot loops: the compiled twins when `orbitmq.speedups` has them, else the Python originals."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from orbitmq.speedups import compiled
from orbitmq.store import batch_records

#: Which implementation runs ("c" or "python"), for logs and benchmarks.
IMPLEMENTATION = "c" if compiled is not None else "python"

plan_batch: Callable[..., tuple[int, int]] = compiled.plan_batch if compiled is not None else batch_records.plan_batch
write_batch_v4: Callable[..., Any] = (
    compiled.write_batch_v4 if compiled is not None else batch_records.write_batch_v4
)
