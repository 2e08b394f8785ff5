"""The mqadmin registry, the click commands and the generated docs table agree."""

from __future__ import annotations

from pathlib import Path

from orbitmq.admin.cli import admin_group
from orbitmq.admin.doctable import render
from orbitmq.admin.registry import ORBITMQ_COMMANDS, ROCKETMQ_COMMANDS
from orbitmq.remoting.codes import RequestCode

DOC = Path(__file__).resolve().parents[2] / "docs" / "mqadmin-commands.md"


def test_the_committed_docs_table_is_the_generated_one() -> None:
    assert DOC.read_text(encoding="utf-8") == render(), (
        "docs/mqadmin-commands.md is stale: run python -m orbitmq.admin.doctable --write docs/mqadmin-commands.md")


def test_every_registered_rocketmq_command_has_an_orbitmq_command_of_the_same_name() -> None:
    registered = [c for c in ROCKETMQ_COMMANDS if c.registered]
    assert len(registered) == 56  # MQAdminStartup.initSubCommand in 4.9
    missing = [c.rocketmq for c in registered if c.orbitmq != c.rocketmq or c.orbitmq not in admin_group.commands]
    assert missing == []


def test_every_orbitmq_command_is_in_the_table() -> None:
    known = {c.orbitmq for c in ROCKETMQ_COMMANDS if c.orbitmq} | set(ORBITMQ_COMMANDS)
    unlisted = sorted(set(admin_group.commands) - known)
    assert unlisted == [], "add them to ORBITMQ_COMMANDS in orbitmq/admin/registry.py and regenerate the docs table"


def test_every_listing_command_takes_json() -> None:
    listing = [c.orbitmq for c in ROCKETMQ_COMMANDS if c.listing and c.orbitmq]
    lacking = [name for name in listing if not any(p.name == "as_json" for p in admin_group.commands[name].params)]
    assert lacking == []


def test_request_names_are_request_codes() -> None:
    names = {r for c in ROCKETMQ_COMMANDS for r in c.requests}
    assert sorted(n for n in names if n not in RequestCode.__members__) == []
