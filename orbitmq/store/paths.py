"""Every path the store builds under its root, provably inside it.

`store_path(root, *names)` is the one place a name from outside (a topic of a
request, a queue id, a file name of the store's own) becomes part of a path.
Each name must be one path component: not empty, not `.` or `..`, no
separator, no NUL, not absolute. The joined path is then checked, lexically,
to lie under `root`; symlinks an operator placed inside the store (say,
consumequeue/ on another disk) are followed as before, since the check does
not resolve them. `topic_dir_name` adds RocketMQ's topic rule for names that
become folders.

The broker validates names where requests enter; this is the store's own last
line of defence, so a name that slipped past an entry point (or a new entry
point nobody validated) can never make the store create or remove anything
outside its root.
"""

from __future__ import annotations

import os

from orbitmq.common.names import validate_topic
from orbitmq.errors import StoreError

_FORBIDDEN = ("/", "\\", "\x00")


class UnsafePath(StoreError):
    """A name that would lead a store path out of its root (or is no single component)."""


def check_component(name: str) -> str:
    """`name` when it is a single, harmless path component; raises UnsafePath otherwise."""
    if not name or name in (".", "..") or any(c in name for c in _FORBIDDEN) or os.path.isabs(name):
        raise UnsafePath(f"{name!r} cannot name a file or folder of the store")
    return name


def check_topic_dir(topic: str) -> str:
    """`topic` when it passes RocketMQ's topic rule (characters ``%|a-zA-Z0-9_-``, at most 127),
    which also makes it a single path component; raises UnsafePath otherwise."""
    remark = validate_topic(topic)
    if remark is not None:
        raise UnsafePath(f"topic {topic!r} cannot name a store folder: {remark}")
    return check_component(topic)


def store_path(root: str, *names: str) -> str:
    """`root` joined with `names`, each a single component, and checked to lie under `root`."""
    for name in names:
        check_component(name)
    path = os.path.join(root, *names)
    base = os.path.normpath(root)
    if os.path.commonpath([base, os.path.normpath(path)]) != base:
        raise UnsafePath(f"{path!r} is outside the store folder {root!r}")
    return path


def queue_dir(root: str, topic: str, queue_id: int) -> str:
    """`<root>/<topic>/<queueId>`: the folder of one ConsumeQueue."""
    if queue_id < 0:
        raise UnsafePath(f"queue id {queue_id} cannot name a store folder")
    return store_path(root, check_topic_dir(topic), str(queue_id))


__all__ = ["UnsafePath", "check_component", "check_topic_dir", "queue_dir", "store_path"]
