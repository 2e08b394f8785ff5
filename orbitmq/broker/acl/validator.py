"""`AclValidator`: the broker's per-request ACL check and the hot-reloaded plain_acl.yml.

Order of the check (RocketMQ 4.9's): a peer in globalWhiteRemoteAddresses
passes; otherwise the request must carry an AccessKey known to the file; a
peer matching that account's whiteRemoteAddress passes; otherwise the
Signature must match the account's secret key; then admin-only codes need
an admin account, and each topic and group the request touches needs the
permission (an explicit entry, else the account's default; an admin account
without entries has every right). Any failure raises `AclError` whose text
the broker sends as the SYSTEM_ERROR remark.
"""

from __future__ import annotations

import asyncio
import logging
import os

from orbitmq.broker.acl import plain_config
from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.permission import ADMIN_CODES, allows
from orbitmq.broker.acl.plain_config import Account, AccountUpdate, PlainAcl
from orbitmq.broker.acl.resources import needed_resources
from orbitmq.broker.acl.signature import ACCESS_KEY, SIGNATURE, matches
from orbitmq.common.names import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.remoting.command import RemotingCommand

log = logging.getLogger("orbitmq.broker.acl")

#: How often the file's modification time and size are compared with the loaded ones.
DEFAULT_RELOAD_INTERVAL = 1.0


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class AclValidator:
    """Validates requests against the plain ACL file at `path`.

    Guarantees: `load()` refuses a missing or malformed file (the broker then
    does not start); a file changed on disk is reloaded within
    `reload_interval` seconds by `watch()`, and a malformed new version is
    logged and ignored (the previous rules stay in force); edits through the
    admin codes are written atomically and take effect at once.
    """

    def __init__(self, path: str, reload_interval: float = DEFAULT_RELOAD_INTERVAL) -> None:
        self.path = path
        self.reload_interval = reload_interval
        self.acl = PlainAcl()
        self._stamp: tuple[int, int] | None = None

    def load(self) -> None:
        """Read the file now; raises `AclError` if it is missing or malformed."""
        stamp = _stamp(self.path)
        self.acl = plain_config.load_file(self.path)
        self._stamp = stamp

    def reload_if_changed(self) -> bool:
        """Reload when the file's mtime or size changed; True if new rules were taken."""
        stamp = _stamp(self.path)
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        if stamp is None:
            log.error("ACL file %s disappeared; keeping the rules loaded before", self.path)
            return False
        try:
            self.acl = plain_config.load_file(self.path)
        except AclError as exc:
            log.error("ACL file %s not reloaded, keeping the previous rules: %s", self.path, exc)
            return False
        log.info("ACL file %s reloaded (version %d)", self.path, self.acl.counter)
        return True

    async def watch(self) -> None:
        """Poll the file forever (run as a task; cancel to stop)."""
        while True:
            await asyncio.sleep(self.reload_interval)
            self.reload_if_changed()

    # --- the check -------------------------------------------------------------

    def check(self, request: RemotingCommand, host: str) -> None:
        """Raise `AclError` unless the peer at `host` may send `request`."""
        acl = self.acl
        if acl.global_white(host):
            return
        fields = request.ext_fields or {}
        access_key = fields.get(ACCESS_KEY)
        if not access_key:
            raise AclError("No accessKey is configured")
        account = acl.accounts.get(access_key)
        if account is None:
            raise AclError(f"No acl config for {access_key}")
        if account.white(host):
            return
        given = fields.get(SIGNATURE)
        if not given or not matches(fields, request.body_bytes(), account.secret_key, given):
            raise AclError(f"Check signature failed for accessKey={access_key}")
        self._check_perms(request, account)

    @staticmethod
    def _check_perms(request: RemotingCommand, account: Account) -> None:
        if request.code in ADMIN_CODES and not account.admin:
            raise AclError(
                f"Need admin permission for request code={request.code}, but accessKey={account.access_key} is not"
            )
        needed = needed_resources(request)
        if not needed or (account.admin and not account.perms):
            return
        for resource, perm in needed:
            owned = account.perms.get(resource)
            is_group = resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
            if owned is None:
                owned = account.default_group_perm if is_group else account.default_topic_perm
                if not allows(perm, owned):
                    raise AclError(f"No default permission for {_describe(resource, is_group)}")
            elif not allows(perm, owned):
                raise AclError(f"No permission for {_describe(resource, is_group)}")

    # --- edits (ACL admin codes) -------------------------------------------------

    def update_account(self, update: AccountUpdate) -> None:
        self.acl = plain_config.update_account(self.path, self.acl, update)
        self._stamp = _stamp(self.path)

    def delete_account(self, access_key: str) -> None:
        self.acl = plain_config.delete_account(self.path, self.acl, access_key)
        self._stamp = _stamp(self.path)

    def set_global_white(self, addrs: list[str]) -> None:
        self.acl = plain_config.set_global_white(self.path, self.acl, addrs)
        self._stamp = _stamp(self.path)


def _describe(resource: str, is_group: bool) -> str:
    if is_group:
        return f"group {resource[len(RETRY_GROUP_TOPIC_PREFIX):]}"
    return f"topic {resource}"
