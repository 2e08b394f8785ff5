"""Compiled twins of hot loops, when they are built and allowed.

`orbitmq._speedups` (C, built by the package's own build from orbitmq/_speedups.c) holds
faster versions of functions whose pure-Python originals stay the reference, with the same
signatures and results. Set ORBITMQ_PURE_PYTHON=1 (any value but "" and "0") to run the
Python originals everywhere, for comparison or diagnosis; the test suite runs both ways.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

#: True when ORBITMQ_PURE_PYTHON asks for the Python originals.
PURE_PYTHON = os.environ.get("ORBITMQ_PURE_PYTHON", "") not in ("", "0")


def _load() -> ModuleType | None:
    if PURE_PYTHON:
        return None
    try:
        return importlib.import_module("orbitmq._speedups")
    except ImportError:
        return None


#: The compiled module, or None when it is not built or not allowed.
compiled: ModuleType | None = _load()
