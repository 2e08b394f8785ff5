"""`orbitmq admin` / `mqadmin`: RocketMQ's admin commands under their RocketMQ names and flags.

Every command takes `-n host:port[;host:port]` (or $NAMESRV_ADDR) and `-h`.
Exit codes: 0 done; 1 the operation failed (unreachable peer, refusal with
its RocketMQ code and remark, nothing found); 2 usage error (bad or missing
flags). See `orbitmq.admin.runner`.
"""

from __future__ import annotations

import click

from orbitmq.admin.commands import broker, cluster, consumer, message, offset, topic, trace


@click.group(
    "admin",
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="Exit codes: 0 success, 1 operation failed, 2 usage error. "
    "NAMESRV_ADDR is used when -n is not given.",
)
def admin_group() -> None:
    """Administer topics, groups, brokers and messages (RocketMQ's mqadmin)."""


for _module in (topic, cluster, broker, consumer, offset, message, trace):
    for _command in _module.COMMANDS:
        admin_group.add_command(_command)
