"""Output helpers shared by the commands that print as RocketMQ 4.9's mqadmin does.

* `jline(fmt, *args)` — one `System.out.printf` line: Java's `%-20s`, `%12d`, `%11.2f` and
  `%n` mean what Python's `%` operator makes of them, so the format strings are RocketMQ's own.
* `front(text, size)` — `UtilAll.frontStringAtLeast`: at most `size` characters.
* `json_option` / `emit_json` — `--json` on listing commands: one JSON document on stdout
  (rows as objects under RocketMQ's column names without the `#`), for scripts.
* `Progress` — a progress bar on stderr for long commands, drawn only while stdout is a
  terminal, so piped and captured output stays exactly what scripts expect.
"""

from __future__ import annotations

import decimal
import json
import math
import re
import sys
import time
from collections.abc import Callable
from typing import Any, Self, TypeVar

import click

from orbitmq.client.results import SendResult

F = TypeVar("F", bound=Callable[..., Any])


_SPEC = re.compile(r"%(?P<flags>[-#+ 0,(]*)(?P<width>\d+)?(?:\.(?P<prec>\d+))?(?P<conv>[a-zA-Z%])")


def jformat(fmt: str, *args: Any) -> str:
    """Java's `String.format` for the conversions mqadmin uses (%s %d %f with flags, %n).

    `%f` rounds as Java's Formatter does: half-up on the double's shortest decimal form
    (0.125 -> "0.13", 0.5 with %.0f -> "1"), where Python's `%` rounds the binary value half-even.
    """
    values = list(args)
    pieces: list[str] = []
    converted: list[Any] = []
    last = 0
    i = 0
    for m in _SPEC.finditer(fmt):
        pieces.append(fmt[last:m.start()])
        last = m.end()
        conv = m.group("conv")
        if conv in "%n":
            pieces.append("%%" if conv == "%" else "\n")
            continue
        value = values[i] if i < len(values) else None
        i += 1
        if conv == "f" and isinstance(value, (int, float)) and not isinstance(value, bool):
            pieces.append("%s")
            converted.append(_java_float(value, m.group("flags"), m.group("width"), m.group("prec")))
        else:
            pieces.append(m.group(0))
            converted.append(_java_text(value))
    pieces.append(fmt[last:])
    return "".join(pieces) % tuple(converted)


def _java_float(value: float, flags: str, width: str | None, prec: str | None) -> str:
    """One `%f` conversion as java.util.Formatter writes it."""
    number = float(value)
    if math.isnan(number):
        text = "NaN"
    elif math.isinf(number):
        text = "Infinity" if number > 0 else "-Infinity"
    else:
        places = 6 if prec is None else int(prec)
        with decimal.localcontext() as ctx:
            ctx.prec = 1000
            exact = decimal.Decimal(repr(number)).quantize(decimal.Decimal(1).scaleb(-places), decimal.ROUND_HALF_UP)
        text = f"{exact:{',' if ',' in flags else ''}f}"
        if not text.startswith("-"):
            text = ("+" if "+" in flags else " " if " " in flags else "") + text
    size = int(width or 0)
    if "-" in flags:
        return text.ljust(size)
    if "0" in flags and text[:1] in "+- " and text[1:2].isdigit():
        return text[0] + text[1:].rjust(size - 1, "0")
    if "0" in flags and text[:1].isdigit():
        return text.rjust(size, "0")
    return text.rjust(size)


def _java_text(value: Any) -> Any:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def jline(fmt: str, *args: Any) -> None:
    """Print like `System.out.printf(fmt, args)` (the format carries its own `%n`)."""
    click.echo(jformat(fmt, *args), nl=False)


def front(text: Any, size: int) -> str:
    """`UtilAll.frontStringAtLeast(text, size)`: the first `size` characters."""
    value = "null" if text is None else str(text)
    return value[:size]


def json_option(func: F) -> F:
    """`--json`: print the listing as one JSON document instead of mqadmin's columns."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print the result as JSON (for scripts) instead of columns."
    )(func)


def emit_json(value: Any) -> None:
    click.echo(json.dumps(value, indent=2, sort_keys=False, ensure_ascii=False, default=str))


def stdout_is_terminal() -> bool:
    """True when stdout is a terminal (the only case a progress bar is drawn)."""
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """A one-line progress bar on stderr, redrawn at most every 0.1 s; silent unless stdout is a terminal.

    Use as `with Progress(total, "printMsg") as bar: ... bar.advance(n)`; `total` may grow
    (`bar.total += n`) as the work becomes known.
    """

    WIDTH = 30

    def __init__(self, total: int, label: str) -> None:
        self.total = max(total, 0)
        self.done = 0
        self.label = label
        self.enabled = stdout_is_terminal()
        self._last_draw = 0.0

    def __enter__(self) -> Self:
        self._draw(force=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._draw(force=True)
            click.echo("", err=True)

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def render(self) -> str:
        total = max(self.total, self.done, 1)
        filled = int(self.WIDTH * self.done / total)
        percent = 100.0 * self.done / total
        return f"\r{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] {self.done}/{total} {percent:5.1f}%"

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last_draw < 0.1:
            return
        self._last_draw = now
        click.echo(self.render(), err=True, nl=False)


def mq_text(topic: str, broker_name: str, queue_id: int) -> str:
    """`MessageQueue.toString()`."""
    return f"MessageQueue [topic={topic}, brokerName={broker_name}, queueId={queue_id}]"


def java_date(ms: int, millis: bool = False) -> str:
    """`UtilAll.formatDate` with yyyy-MM-dd HH:mm:ss (or yyyy-MM-dd#HH:mm:ss:SSS), local time."""
    moment = time.localtime(ms / 1000)
    if millis:
        return time.strftime("%Y-%m-%d#%H:%M:%S", moment) + f":{ms % 1000:03d}"
    return time.strftime("%Y-%m-%d %H:%M:%S", moment)


def table_json(headers: list[str], rows: list[tuple[Any, ...]] | list[list[Any]]) -> list[dict[str, Any]]:
    """Rows of a column listing as objects keyed by the column names (the `--json` form)."""
    return [dict(zip(headers, row)) for row in rows]


def send_result_text(result: SendResult) -> str:
    """`SendResult.toString()`."""
    mq = result.message_queue
    return (f"SendResult [sendStatus={result.status.name}, msgId={result.msg_id}, offsetMsgId={result.offset_msg_id}, "
            f"messageQueue={mq_text(mq.topic, mq.broker_name, mq.queue_id)}, queueOffset={result.queue_offset}]")
