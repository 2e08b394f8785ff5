"""Dead-letter commands: queryDlq, resendDlq, exportDlq (OrbitMQ's; see orbitmq/admin/dlq.py).

Selection flags, common to the three: -i message id (repeatable), -k key,
-b/-e the time range in which the messages became dead letters, -s a SQL92
expression on their properties (e.g. "ORBITMQ_ATTEMPTS > 3"). Bad flags exit 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import IO, Any, TypeVar

import click

from orbitmq.admin import dlq
from orbitmq.admin.api import AdminClient
from orbitmq.admin.commands.consumer import validated_group
from orbitmq.admin.commands.topic import validated_topic
from orbitmq.admin.jprint import emit_json, json_option, table_json
from orbitmq.admin.output import format_millis, render_table
from orbitmq.admin.runner import namesrv_option, run_admin, timeout_option
from orbitmq.admin.times import parse_timestamp

F = TypeVar("F", bound=Callable[..., Any])
_ERROR_COLUMN = 60


def selection_options(func: F) -> F:
    for decorator in reversed([
        click.option("-g", "--groupName", "group", required=True, help="Consumer group whose %DLQ% is read."),
        click.option("-i", "--msgId", "ids", multiple=True,
                     help="Original message id (or the dead letter's offset id); repeatable."),
        click.option("-k", "--msgKey", "key", help="Only messages with this key."),
        click.option("-b", "--beginTimestamp", "begin", help="Dead since: 'now', ms, or yyyy-MM-dd#HH:mm:ss:SSS."),
        click.option("-e", "--endTimestamp", "end", help="Dead until (same forms as -b)."),
        click.option("-s", "--sql", "sql", help="SQL92 expression on the message properties."),
    ]):
        func = decorator(func)
    return func


def _time(text: str | None, hint: str) -> int | None:
    if text is None:
        return None
    try:
        return parse_timestamp(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint=hint) from None


def make_selection(
    group: str, ids: tuple[str, ...], key: str | None, begin: str | None, end: str | None, sql: str | None,
) -> dlq.Selection:
    validated_group(group)
    begin_ms = _time(begin, "'-b' / '--beginTimestamp'")
    end_ms = _time(end, "'-e' / '--endTimestamp'")
    try:
        return dlq.Selection.of(ids=ids, key=key, begin_ms=begin_ms, end_ms=end_ms, sql=sql)
    except ValueError as exc:
        hint = "'-s' / '--sql'" if sql and "time range" not in str(exc) else "'-b' / '-e'"
        raise click.BadParameter(str(exc), param_hint=hint) from None


def _short(text: str) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= _ERROR_COLUMN else text[: _ERROR_COLUMN - 3] + "..."


@click.command("queryDlq")
@selection_options
@json_option
@namesrv_option
@timeout_option
def query_dlq(group: str, ids: tuple[str, ...], key: str | None, begin: str | None, end: str | None,
              sql: str | None, as_json: bool, namesrv: str | None, timeout: float) -> None:
    """List a group's dead letters: original topic and id, attempts, times and the last error."""
    selection = make_selection(group, ids, key, begin, end, sql)

    async def action(admin: AdminClient) -> None:
        letters = await dlq.browse(admin, group, selection)
        rows = [(d.original_id, d.original_topic, d.attempts, format_millis(d.msg.born_timestamp),
                 format_millis(d.dead_ms), "yes" if d.resent else "no", _short(d.error) or "-") for d in letters]
        headers = ["OriginalId", "OriginalTopic", "Attempts", "BornTime", "DeadTime", "Resent", "LastError"]
        if as_json:
            emit_json(table_json(headers, rows))
            return
        click.echo(render_table(headers, rows))
        click.echo(f"{len(letters)} dead letter(s) in {dlq.dlq_topic(group)}")

    run_admin(namesrv, timeout, action)


@click.command("resendDlq")
@selection_options
@click.option("-t", "--topic", help="Resend to this topic (default: each message's original topic).")
@click.option("--dry-run", "dry_run", is_flag=True, help="Only count what would be resent.")
@namesrv_option
@timeout_option
def resend_dlq(group: str, ids: tuple[str, ...], key: str | None, begin: str | None, end: str | None,
               sql: str | None, topic: str | None, dry_run: bool, namesrv: str | None, timeout: float) -> None:
    """Resend selected dead letters (all without selection flags); never twice the same one."""
    selection = make_selection(group, ids, key, begin, end, sql)
    if topic is not None:
        validated_topic(topic)

    async def action(admin: AdminClient) -> None:
        report = await dlq.resend(admin, group, selection, topic=topic, dry_run=dry_run)
        verb = "would resend" if dry_run else "resent"
        click.echo(f"matched {report.matched}, {verb} {report.resent}, skipped {report.skipped} (resent before)")

    run_admin(namesrv, timeout, action)


@click.command("exportDlq")
@selection_options
@click.option("-o", "--output", "output", required=True, help="JSON lines file to write ('-' for stdout).")
@namesrv_option
@timeout_option
def export_dlq(group: str, ids: tuple[str, ...], key: str | None, begin: str | None, end: str | None,
               sql: str | None, output: str, namesrv: str | None, timeout: float) -> None:
    """Export selected dead letters as JSON lines (one object per message, body as text or base64)."""
    selection = make_selection(group, ids, key, begin, end, sql)
    try:
        out: IO[str] = sys.stdout if output == "-" else open(output, "w", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise click.BadParameter(f"cannot write {output}: {exc.strerror}", param_hint="'-o' / '--output'") from None

    async def action(admin: AdminClient) -> None:
        letters = await dlq.browse(admin, group, selection)
        count = dlq.export_jsonl(letters, out)
        out.flush()
        click.echo(f"exported {count} dead letter(s)", err=output == "-")

    try:
        run_admin(namesrv, timeout, action)
    finally:
        if out is not sys.stdout:
            out.close()


COMMANDS = [query_dlq, resend_dlq, export_dlq]
