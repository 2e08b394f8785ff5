"""`AclValidator`: the per-request ACL check and the hot-reloaded plain_acl.yml.

Order of the check:

1. Addresses. With `whiteAddressSkipsSignature: true` (RocketMQ 4.x), a peer in
   globalWhiteRemoteAddresses passes with no further check, and a peer
   matching its account's whiteRemoteAddress skips the signature. Otherwise
   (the default) both lists only restrict: a non-empty global list admits
   only its addresses, an account's pattern only its own, and the request
   is still signed and checked.
2. The AccessKey must name an account; the Signature must verify with its
   secret: version 2 (`SignatureVersion: 2`: canonical form, timestamp
   window, nonce never seen) or, unless the file or the account refuses it,
   RocketMQ 4.x's version 1.
3. The code's rule (resources.py): admin-only codes need an admin account;
   every topic and group the request names needs its permission (an
   explicit entry, else the account's default; an admin account without
   entries has every right); and, for the codes that name a stored message,
   the message's topic is checked with the `StoredMessages` the broker gives.
4. After the handler, `screen` checks the messages a response carries
   (VIEW_MESSAGE_BY_ID, QUERY_MESSAGE) against the account's rights.

Any failure raises `AclError`, whose `code` and text answer the request.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from orbitmq.broker.acl import plain_config
from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.permission import PUB, SUB, allows
from orbitmq.broker.acl.plain_config import Account, AccountUpdate, PlainAcl
from orbitmq.broker.acl.resources import LEGACY_CHECKED, NeedsAdmin, Stored, group_resource, rule_for
from orbitmq.broker.acl.signature import (
    ACCESS_KEY,
    SIGNATURE,
    SIGNATURE_NONCE,
    SIGNATURE_TIMESTAMP,
    SIGNATURE_VERSION,
    V2,
    ReplayGuard,
    matches,
    matches_v2,
)
from orbitmq.common import properties as mc
from orbitmq.common.message import MessageExt
from orbitmq.common.msgid import parse_offset_msg_id
from orbitmq.common.names import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.common.record import decode_record
from orbitmq.errors import OrbitMQError
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.command import RemotingCommand

log = logging.getLogger("orbitmq.broker.acl")

#: How often the file's modification time and size are compared with the loaded ones.
DEFAULT_RELOAD_INTERVAL = 1.0


class StoredMessages(Protocol):
    """What the checks of `Stored` rules read from the broker."""

    def message_at(self, commit_log_offset: int) -> MessageExt | None:
        """The record at that CommitLog offset (body not needed), or None."""

    def subscribes(self, group: str, topic: str) -> bool:
        """True when a consumer of `group` connected to this broker subscribes to `topic`."""


@dataclass(frozen=True)
class Grant:
    """Who passed the check: the account, or None for a RocketMQ 4.x whitelisted address
    (`whiteAddressSkipsSignature`), which has every right."""

    account: Account | None


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _describe(resource: str) -> str:
    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return f"group {resource[len(RETRY_GROUP_TOPIC_PREFIX):]}"
    return f"topic {resource}"


def refusal(account: Account, resource: str, perm: int) -> str | None:
    """Why `account` may not use `resource` with `perm`, or None when it may."""
    if account.admin and not account.perms:
        return None
    owned = account.perms.get(resource)
    if owned is None:
        is_group = resource.startswith(RETRY_GROUP_TOPIC_PREFIX)
        owned = account.default_group_perm if is_group else account.default_topic_perm
        if not allows(perm, owned):
            return f"No default permission for {_describe(resource)}"
        return None
    if not allows(perm, owned):
        return f"No permission for {_describe(resource)}"
    return None


def origin_topic(msg: MessageExt) -> str:
    """The topic a message was first sent to: retry copies name it in RETRY_TOPIC, half
    messages and delayed ones in REAL_TOPIC."""
    props = msg.properties or {}
    if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return props.get(mc.RETRY_TOPIC) or msg.topic
    return props.get(mc.REAL_TOPIC) or msg.topic


class AclValidator:
    """Validates requests against the plain ACL file at `path`.

    Guarantees: `load()` refuses a missing or malformed file (the broker then
    does not start); a file changed on disk is reloaded within
    `reload_interval` seconds by `watch()`, and a malformed new version is
    logged and ignored (the previous rules stay in force); edits through the
    admin codes are written atomically and take effect at once.
    """

    def __init__(
        self,
        path: str,
        reload_interval: float = DEFAULT_RELOAD_INTERVAL,
        *,
        clock_ms: Callable[[], int] | None = None,
    ) -> None:
        self.path = path
        self.reload_interval = reload_interval
        self.acl = PlainAcl()
        self._stamp: tuple[int, int] | None = None
        self.clock_ms = clock_ms or (lambda: int(time.time() * 1000))
        self.replays = ReplayGuard()
        #: Set by the broker; None on a NameServer (whose rules name no stored message).
        self.stored: StoredMessages | None = None

    def _took(self, acl: PlainAcl) -> None:
        self.acl = acl
        self.replays.window_ms = acl.signature_skew_ms

    def load(self) -> None:
        """Read the file now; raises `AclError` if it is missing or malformed."""
        stamp = _stamp(self.path)
        self._took(plain_config.load_file(self.path))
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
            self._took(plain_config.load_file(self.path))
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

    def check(self, request: RemotingCommand, host: str) -> Grant:
        """Raise `AclError` unless the peer at `host` may send `request`; returns who it is."""
        acl = self.acl
        legacy_white = acl.white_skips_signature
        if legacy_white and acl.global_white(host):
            return Grant(None)
        if not legacy_white and acl.global_white_addrs and not acl.global_white(host):
            raise AclError(f"the address {host} is not in globalWhiteRemoteAddresses", no_permission=True)
        fields = request.ext_fields or {}
        access_key = fields.get(ACCESS_KEY)
        if not access_key:
            raise AclError("No accessKey is configured")
        account = acl.accounts.get(access_key)
        if account is None:
            raise AclError(f"No acl config for {access_key}")
        if account.has_white:
            if account.white(host):
                if legacy_white:
                    self._check_rule(request, account)
                    return Grant(account)
            elif not legacy_white:
                raise AclError(
                    f"the address {host} does not match the whiteRemoteAddress of accessKey={access_key}",
                    no_permission=True,
                )
        self._check_signature(request, account)
        self._check_rule(request, account)
        return Grant(account)

    def _check_signature(self, request: RemotingCommand, account: Account) -> None:
        fields = request.ext_fields or {}
        given = fields.get(SIGNATURE)
        access_key = account.access_key
        if fields.get(SIGNATURE_VERSION) == V2:
            if not given or not matches_v2(request.code, fields, request.body_bytes(), account.secret_key, given):
                raise AclError(f"Check signature failed for accessKey={access_key}")
            # Only a verified request may take a nonce: otherwise anyone could fill the cache.
            why = self.replays.admit(
                access_key, fields.get(SIGNATURE_TIMESTAMP), fields.get(SIGNATURE_NONCE), self.clock_ms()
            )
            if why is not None:
                raise AclError(f"accessKey={access_key}: {why}", no_permission=True)
            return
        if account.signature_version >= 2 or not self.acl.allow_legacy_signature:
            raise AclError(
                f"accessKey={access_key} must sign with {SIGNATURE_VERSION} {V2}; "
                "RocketMQ 4.x signatures are refused here",
                no_permission=True,
            )
        if not given or not matches(fields, request.body_bytes(), account.secret_key, given):
            raise AclError(f"Check signature failed for accessKey={access_key}")

    def _check_rule(self, request: RemotingCommand, account: Account) -> None:
        code = request.code
        rule = rule_for(code)
        if rule.admin and not account.admin:
            raise AclError(
                f"Need admin permission for request code={code}, but accessKey={account.access_key} is not",
                no_permission=code not in LEGACY_CHECKED,
            )
        try:
            needed = rule.needs(request)
        except NeedsAdmin:
            if not account.admin:
                raise
            needed = []
        for resource, perm in needed:
            why = refusal(account, resource, perm)
            if why is not None:
                raise AclError(why, no_permission=code not in LEGACY_CHECKED)
        every_right = account.admin and not account.perms
        if rule.stored is not Stored.NONE and self.stored is not None and not every_right:
            self._check_stored(request, account, rule.stored, self.stored)

    # --- stored messages ------------------------------------------------------------

    def _check_stored(self, request: RemotingCommand, account: Account, kind: Stored, stored: StoredMessages) -> None:
        fields = request.ext_fields or {}
        if kind is Stored.SEND_BACK:
            msg = _at(stored, fields.get("offset"))
            if msg is not None:
                self._check_send_back(account, fields.get("group") or "", msg, stored)
        elif kind is Stored.END_TRANSACTION:
            msg = _at(stored, fields.get("commitLogOffset"))
            if msg is not None:
                self._need(account, origin_topic(msg), PUB, "commit or roll back a message of")
        elif kind is Stored.BY_MSG_ID:
            try:
                offset = parse_offset_msg_id(fields.get("msgId") or "").commit_log_offset
            except ValueError:
                return  # the handler answers a malformed id
            msg = stored.message_at(offset)
            if msg is not None:
                self._need(account, origin_topic(msg), SUB, "consume a message of")

    def _check_send_back(self, account: Account, group: str, msg: MessageExt, stored: StoredMessages) -> None:
        retry_of_group = group_resource(group)
        if msg.topic.startswith(RETRY_GROUP_TOPIC_PREFIX) and msg.topic != retry_of_group:
            raise AclError(
                f"the message at this offset is in {msg.topic}, not in the retry topic of group {group}",
                no_permission=True,
            )
        origin = origin_topic(msg)
        if origin == retry_of_group:
            return
        if not stored.subscribes(group, origin):
            raise AclError(
                f"group {group} does not subscribe to topic {origin}, the topic of the message at this offset",
                no_permission=True,
            )
        self._need(account, origin, SUB, "send back a message of")

    @staticmethod
    def _need(account: Account, topic: str, perm: int, doing: str) -> None:
        why = refusal(account, topic, perm)
        if why is not None:
            raise AclError(f"{why}: accessKey={account.access_key} may not {doing} topic {topic}",
                           no_permission=True)

    def screen(self, request: RemotingCommand, response: RemotingCommand, grant: Grant) -> RemotingCommand:
        """Check the messages a response carries; returns the response to send (maybe another)."""
        account = grant.account
        if account is None or response.code != ResponseCode.SUCCESS:
            return response
        kind = rule_for(request.code).stored
        if kind is Stored.VIEW:
            for msg in _records(response.body):
                why = refusal(account, msg.topic, SUB)
                if why is not None:
                    return request.response(
                        ResponseCode.NO_PERMISSION,
                        f"{why}: accessKey={account.access_key} may not view a message of topic {msg.topic}",
                    )
        elif kind is Stored.QUERY:
            return self._screen_query(request, response, account)
        return response

    @staticmethod
    def _screen_query(request: RemotingCommand, response: RemotingCommand, account: Account) -> RemotingCommand:
        kept: list[memoryview] = []
        dropped = 0
        for view in _record_views(response.body):
            try:
                topic = decode_record(view, with_body=False, decompress=False).topic
            except OrbitMQError:
                dropped += 1
                continue
            if refusal(account, topic, SUB) is None:
                kept.append(view)
            else:
                dropped += 1
        if not dropped:
            return response
        if not kept:
            return request.response(
                ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct",
                dict(response.ext_fields or {}),
            )
        return request.response(ResponseCode.SUCCESS, None, dict(response.ext_fields or {}), kept)

    # --- edits (ACL admin codes) -------------------------------------------------

    def update_account(self, update: AccountUpdate) -> None:
        self._took(plain_config.update_account(self.path, self.acl, update))
        self._stamp = _stamp(self.path)

    def delete_account(self, access_key: str) -> None:
        self._took(plain_config.delete_account(self.path, self.acl, access_key))
        self._stamp = _stamp(self.path)

    def set_global_white(self, addrs: list[str]) -> None:
        self._took(plain_config.set_global_white(self.path, self.acl, addrs))
        self._stamp = _stamp(self.path)




def _at(stored: StoredMessages, offset_text: str | None) -> MessageExt | None:
    if not offset_text or not offset_text.lstrip("-").isdigit():
        return None  # the handler answers a missing or malformed offset
    offset = int(offset_text)
    return stored.message_at(offset) if offset >= 0 else None


def _buffers(body: object) -> list[memoryview]:
    if body is None:
        return []
    if isinstance(body, list):
        return [memoryview(b) for b in body]
    return [memoryview(body)]  # type: ignore[arg-type]


def _record_views(body: object) -> list[memoryview]:
    """Each whole record in a response body (a list of buffers, each holding whole records)."""
    views: list[memoryview] = []
    for buf in _buffers(body):
        pos = 0
        while len(buf) - pos >= 4:
            size = int.from_bytes(buf[pos : pos + 4], "big", signed=True)
            if size <= 0 or pos + size > len(buf):
                views.append(buf[pos:])  # not a record: refused by the caller's decode
                break
            views.append(buf[pos : pos + size])
            pos += size
    return views


def _records(body: object) -> list[MessageExt]:
    out = []
    for view in _record_views(body):
        try:
            out.append(decode_record(view, with_body=False, decompress=False))
        except OrbitMQError:
            # An unreadable record is never handed out unchecked.
            out.append(MessageExt(topic=""))
    return out
