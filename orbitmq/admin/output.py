"""Plain-text output of the admin commands: aligned tables, key/value blocks, times.

Everything here is pure: functions take rows and return text, so the commands
stay short and the formatting is tested without servers. Column widths follow
the widest cell, as mqadmin's `%-32s`-style columns do, but never truncate.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence

Cell = str | int | float | None


def _text(cell: Cell) -> str:
    if cell is None:
        return "-"
    if isinstance(cell, float):
        return f"{cell:.2f}"
    return str(cell)


def render_table(headers: Sequence[str], rows: Iterable[Sequence[Cell]], gap: int = 2) -> str:
    """An aligned table: a `#`-prefixed header line (mqadmin's style), then one line per row.

    Numbers are right-aligned, text left-aligned; `None` shows as `-`. The
    result has no trailing spaces and ends without a newline.
    """
    head = [f"#{h}" for h in headers]
    body = [[_text(c) for c in row] for row in rows]
    for row in body:
        if len(row) != len(head):
            raise ValueError(f"row has {len(row)} cells, table has {len(head)} columns")
    numeric = _numeric_columns(body, len(head))
    widths = [max([len(head[i])] + [len(r[i]) for r in body]) for i in range(len(head))]
    lines = [_line(head, widths, [False] * len(head), gap)]
    lines.extend(_line(r, widths, numeric, gap) for r in body)
    return "\n".join(lines)


def _numeric_columns(body: list[list[str]], ncols: int) -> list[bool]:
    def is_number(text: str) -> bool:
        try:
            float(text)
        except ValueError:
            return False
        return True

    return [bool(body) and all(is_number(r[i]) or r[i] == "-" for r in body) for i in range(ncols)]


def _line(cells: Sequence[str], widths: Sequence[int], right: Sequence[bool], gap: int) -> str:
    parts = [c.rjust(w) if r else c.ljust(w) for c, w, r in zip(cells, widths, right)]
    return (" " * gap).join(parts).rstrip()


def render_kv(pairs: Mapping[str, Cell] | Iterable[tuple[str, Cell]], sort: bool = False) -> str:
    """`key : value` lines with the colons aligned (brokerStatus, message detail)."""
    items = list(pairs.items()) if isinstance(pairs, Mapping) else list(pairs)
    if sort:
        items.sort(key=lambda kv: kv[0])
    if not items:
        return ""
    width = max(len(k) for k, _ in items)
    return "\n".join(f"{k.ljust(width)} : {_text(v)}".rstrip() for k, v in items)


def format_millis(ms: int) -> str:
    """A millisecond epoch time as local `yyyy-MM-dd HH:mm:ss,SSS` (mqadmin's format); 0 shows as `-`."""
    if ms <= 0:
        return "-"
    moment = _dt.datetime.fromtimestamp(ms / 1000.0)
    return moment.strftime("%Y-%m-%d %H:%M:%S") + f",{ms % 1000:03d}"
