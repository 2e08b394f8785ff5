"""plain_acl.yml: reading it into an immutable `PlainAcl`, and the edits the ACL admin codes make.

File shape (RocketMQ 4.x):

    globalWhiteRemoteAddresses: [10.10.103.*]
    accounts:
      - accessKey: RocketMQ          # longer than 6 characters
        secretKey: 12345678          # longer than 6 characters
        whiteRemoteAddress:          # optional pattern (addresses.py)
        admin: false
        defaultTopicPerm: DENY       # missing: DENY
        defaultGroupPerm: SUB        # missing: DENY
        topicPerms: [topicA=DENY, topicB=PUB|SUB]
        groupPerms: [groupA=SUB]
    dataVersion: [{counter: 3, timestamp: 1700000000000}]   # written by the broker

OrbitMQ's additions (docs/security.md):

    allowLegacySignature: true       # false: refuse RocketMQ 4.x (version 1) signatures
    signatureSkewMillis: 300000      # version 2: timestamp window and replay-cache lifetime
    whiteAddressSkipsSignature: false  # true: RocketMQ 4.x whitelists (no signature needed)
    accounts:
      - accessKey: ...
        signatureVersion: 2          # this account must sign with version 2

Every edit builds the new document, checks that it loads, and only then
replaces the file (write, fsync, rename), so a refused edit never leaves a
broken file behind.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from orbitmq.broker.acl.addresses import Matcher, compile_address, compile_addresses
from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.permission import check_perm_word, parse_perm, split_resource
from orbitmq.common.names import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.store.config_file import write_atomically

KEY_MIN_LENGTH = 6
#: Version 2 signatures: how far a request's timestamp may be from the server's clock (5 minutes,
#: the usual allowance for unsynchronised clocks); also how long a nonce is remembered.
DEFAULT_SIGNATURE_SKEW_MS = 300_000


@dataclass(frozen=True)
class Account:
    """One account; group permissions are keyed by the group's retry topic, as RocketMQ keys them."""

    access_key: str
    secret_key: str
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    perms: Mapping[str, int]
    white: Matcher
    raw: Mapping[str, Any]
    #: 1: RocketMQ 4.x signatures accepted (unless the file refuses them); 2: version 2 only.
    signature_version: int = 1
    #: A whiteRemoteAddress pattern is set (blank means no address restriction).
    has_white: bool = False


@dataclass(frozen=True)
class PlainAcl:
    """The loaded file: accounts by access key, the global white list, the data version."""

    accounts: Mapping[str, Account] = field(default_factory=dict)
    global_white: Matcher = field(default=lambda addr: False)
    global_white_addrs: tuple[str, ...] = ()
    counter: int = 0
    timestamp: int = 0
    document: Mapping[str, Any] = field(default_factory=dict)
    allow_legacy_signature: bool = True
    signature_skew_ms: int = DEFAULT_SIGNATURE_SKEW_MS
    #: RocketMQ 4.x whitelists: a matching address skips the signature and every other check.
    white_skips_signature: bool = False

    @property
    def version_json(self) -> str:
        """DataVersion as RocketMQ writes it in GET_BROKER_CLUSTER_ACL_INFO."""
        return f'{{"counter":{self.counter},"timestamp":{self.timestamp}}}'


def _str_list(value: Any, key: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list):
        raise AclError(f"plain_acl.yml: {key} must be a list")
    return [str(v).strip() for v in value if v is not None and str(v).strip()]


def _check_keys(access_key: Any, secret_key: Any) -> None:
    if access_key is None or len(str(access_key)) <= KEY_MIN_LENGTH:
        raise AclError(f"The accessKey={access_key} cannot be null and length should longer than 6")
    if secret_key is None or len(str(secret_key)) <= KEY_MIN_LENGTH:
        raise AclError(f"The secretKey={secret_key} of accessKey={access_key} cannot be null and length should longer than 6")


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() == "true"


def _flag(doc: Mapping[str, Any], key: str, default: bool) -> bool:
    value = doc.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if str(value).strip().lower() not in ("true", "false"):
        raise AclError(f"plain_acl.yml: {key} must be true or false, not {value!r}")
    return str(value).strip().lower() == "true"


def build_account(raw: Mapping[str, Any]) -> Account:
    """One `accounts` entry -> `Account`; raises `AclError` naming what is wrong."""
    if not isinstance(raw, Mapping):
        raise AclError("plain_acl.yml: every accounts entry must be a mapping")
    access_key, secret_key = raw.get("accessKey"), raw.get("secretKey")
    _check_keys(access_key, secret_key)
    perms: dict[str, int] = {}
    for item in _str_list(raw.get("topicPerms"), "topicPerms"):
        name, perm = split_resource(item)
        perms[name] = parse_perm(perm)
    for item in _str_list(raw.get("groupPerms"), "groupPerms"):
        name, perm = split_resource(item)
        perms[RETRY_GROUP_TOPIC_PREFIX + name] = parse_perm(perm)
    for key in ("defaultTopicPerm", "defaultGroupPerm"):
        if raw.get(key) not in (None, ""):
            check_perm_word(str(raw[key]), key)
    white = raw.get("whiteRemoteAddress")
    version = raw.get("signatureVersion", 1)
    if str(version).strip() not in ("1", "2"):
        raise AclError(f"plain_acl.yml: signatureVersion of {access_key} must be 1 or 2, not {version!r}")
    return Account(
        access_key=str(access_key),
        secret_key=str(secret_key),
        admin=_bool(raw.get("admin", False)),
        default_topic_perm=parse_perm(raw.get("defaultTopicPerm")),
        default_group_perm=parse_perm(raw.get("defaultGroupPerm")),
        perms=perms,
        white=compile_address(None if white is None else str(white)),
        raw=dict(raw),
        signature_version=int(str(version).strip()),
        has_white=bool(white is not None and str(white).strip()),
    )


def parse_document(doc: Any) -> PlainAcl:
    """A YAML document (already parsed) -> `PlainAcl`; raises `AclError`."""
    if doc is None:
        doc = {}
    if not isinstance(doc, Mapping):
        raise AclError("plain_acl.yml must hold a mapping at the top level")
    white_addrs = _str_list(doc.get("globalWhiteRemoteAddresses"), "globalWhiteRemoteAddresses")
    accounts: dict[str, Account] = {}
    raw_accounts = doc.get("accounts") or []
    if not isinstance(raw_accounts, list):
        raise AclError("plain_acl.yml: accounts must be a list")
    for raw in raw_accounts:
        account = build_account(raw)
        if account.access_key in accounts:
            raise AclError(f"plain_acl.yml: accessKey {account.access_key} is defined twice")
        accounts[account.access_key] = account
    counter = timestamp = 0
    versions = doc.get("dataVersion")
    if isinstance(versions, list) and versions and isinstance(versions[0], Mapping):
        try:
            counter = int(versions[0].get("counter", 0))
            timestamp = int(versions[0].get("timestamp", 0))
        except (TypeError, ValueError):
            raise AclError("plain_acl.yml: dataVersion holds no numbers") from None
    skew = doc.get("signatureSkewMillis", DEFAULT_SIGNATURE_SKEW_MS)
    if isinstance(skew, bool) or not str(skew).strip().isdigit() or int(str(skew).strip()) <= 0:
        raise AclError(f"plain_acl.yml: signatureSkewMillis must be a positive number, not {skew!r}")
    return PlainAcl(
        allow_legacy_signature=_flag(doc, "allowLegacySignature", True),
        signature_skew_ms=int(str(skew).strip()),
        white_skips_signature=_flag(doc, "whiteAddressSkipsSignature", False),
        accounts=accounts,
        global_white=compile_addresses(white_addrs),
        global_white_addrs=tuple(white_addrs),
        counter=counter,
        timestamp=timestamp,
        document=dict(doc),
    )


def load_text(text: str) -> PlainAcl:
    """Parse the file's text; a YAML syntax error becomes `AclError`."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise AclError(f"plain_acl.yml is not valid YAML: {exc}") from None
    return parse_document(doc)


def load_file(path: str) -> PlainAcl:
    """Read and parse `path`; raises `AclError` if it is missing or invalid."""
    try:
        with open(path, encoding="utf-8") as f:
            return load_text(f.read())
    except OSError as exc:
        raise AclError(f"cannot read the ACL file {path}: {exc.strerror}") from None


# --- edits (ACL admin codes) ---------------------------------------------------------


@dataclass(frozen=True)
class AccountUpdate:
    """UPDATE_AND_CREATE_ACL_CONFIG's fields; None leaves an existing value as it is."""

    access_key: str
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None


def _next_version(doc: dict[str, Any], current: PlainAcl) -> None:
    now = int(time.time() * 1000)
    doc["dataVersion"] = [{"counter": current.counter + 1, "timestamp": max(now, current.timestamp)}]


def _write(path: str, doc: dict[str, Any], current: PlainAcl) -> PlainAcl:
    _next_version(doc, current)
    loaded = parse_document(doc)  # refuse before writing anything that would not load
    write_atomically(path, yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, default_flow_style=False))
    return loaded


def update_account(path: str, current: PlainAcl, update: AccountUpdate) -> PlainAcl:
    """Create or change one account in the file at `path`; returns the new contents."""
    for items in (update.topic_perms, update.group_perms):
        for item in items or ():
            split_resource(item)
    doc = dict(current.document)
    accounts = [dict(a) for a in (doc.get("accounts") or [])]
    entry = next((a for a in accounts if str(a.get("accessKey")) == update.access_key), None)
    if entry is None:
        _check_keys(update.access_key, update.secret_key)
        entry = {"accessKey": update.access_key}
        accounts.append(entry)
    if update.secret_key:
        entry["secretKey"] = update.secret_key
    if update.white_remote_address is not None:
        entry["whiteRemoteAddress"] = update.white_remote_address
    entry["admin"] = update.admin
    if update.default_topic_perm:
        entry["defaultTopicPerm"] = update.default_topic_perm
    if update.default_group_perm:
        entry["defaultGroupPerm"] = update.default_group_perm
    if update.topic_perms is not None:
        entry["topicPerms"] = list(update.topic_perms)
    if update.group_perms is not None:
        entry["groupPerms"] = list(update.group_perms)
    doc["accounts"] = accounts
    return _write(path, doc, current)


def delete_account(path: str, current: PlainAcl, access_key: str) -> PlainAcl:
    """Remove one account; raises `AclError` if there is none with that key."""
    doc = dict(current.document)
    accounts = [dict(a) for a in (doc.get("accounts") or [])]
    kept = [a for a in accounts if str(a.get("accessKey")) != access_key]
    if len(kept) == len(accounts):
        raise AclError(f"no account with accessKey {access_key}")
    doc["accounts"] = kept
    return _write(path, doc, current)


def set_global_white(path: str, current: PlainAcl, addrs: list[str]) -> PlainAcl:
    """Replace globalWhiteRemoteAddresses."""
    for addr in addrs:
        compile_address(addr)
    doc = dict(current.document)
    doc["globalWhiteRemoteAddresses"] = list(addrs)
    return _write(path, doc, current)
