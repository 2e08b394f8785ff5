"""mqadmin run in the test's own process (click's CliRunner) against a `DevServer`'s NameServer.

`admin(dev, *args)` gives (exit code, stdout, stderr); `ok(dev, *args)` asserts exit 0 and gives stdout.
"""

from __future__ import annotations

from click.testing import CliRunner

from orbitmq.admin.cli import admin_group
from tests.support.dev import DevServer


def admin(dev: DevServer, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(admin_group, [*args, "-n", dev.namesrv])
    return result.exit_code, result.stdout, result.stderr


def ok(dev: DevServer, *args: str) -> str:
    code, out, err = admin(dev, *args)
    assert code == 0, f"{args} exited {code}: {err}{out}"
    return out
