"""The message model shared by client, broker and store.

* `Message` — what a producer sends: topic, body, flag and properties.
* `MessageExt` — a message decoded from a stored record (§5.1), with the
  fields the broker and store assigned.
* `MessageExtBrokerInner` — what the broker hands the store to append: the
  `MessageExt` fields plus the encoded property string and the tag hash code.
* `MessageExtBatch` — a `SEND_BATCH_MESSAGE` body (§5.8) plus the fields all
  its items share.

These are plain mutable data objects (like Java's), with `slots` so the store
and the consumers can create many of them cheaply. Hosts are ``"ip:port"``
strings; IPv6 hosts are written ``"[addr]:port"``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from orbitmq.common import properties as mc
from orbitmq.common.sysflag import TRANSACTION_TYPE_MASK
from orbitmq.errors import MessageValidationError


def waits_for_store(wait: str | None) -> bool:
    """What a WAIT property value means (Message.isWaitStoreMsgOK): absent or "true" in any case."""
    return wait is None or wait.lower() == "true"


@dataclass(slots=True)
class Message:
    """A message as a producer builds it.

    `properties` holds both system properties (TAGS, KEYS, ...) and user
    properties in one map, as in RocketMQ; the accessors below read and write
    the system ones. `body` is sent as given.
    """

    topic: str
    body: bytes = b""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    transaction_id: str | None = None

    # --- tags and keys ------------------------------------------------------

    @property
    def tags(self) -> str | None:
        return self.properties.get(mc.TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self._set(mc.TAGS, value)

    @property
    def keys(self) -> list[str]:
        """The message keys (the KEYS property split on single spaces, empty parts dropped)."""
        raw = self.properties.get(mc.KEYS)
        return [k for k in raw.split(mc.KEY_SEPARATOR) if k] if raw else []

    @keys.setter
    def keys(self, value: str | Iterable[str] | None) -> None:
        if value is None:
            self.properties.pop(mc.KEYS, None)
        elif isinstance(value, str):
            self._set(mc.KEYS, value or None)
        else:
            self._set(mc.KEYS, mc.KEY_SEPARATOR.join(value) or None)

    # --- delivery options ---------------------------------------------------

    @property
    def delay_time_level(self) -> int:
        """Delay level 1..18, or 0 when the message is not delayed."""
        raw = self.properties.get(mc.DELAY_TIME_LEVEL)
        try:
            return int(raw) if raw else 0
        except ValueError:
            return 0

    @delay_time_level.setter
    def delay_time_level(self, level: int) -> None:
        self._set(mc.DELAY_TIME_LEVEL, str(level) if level else None)

    @property
    def wait_store_msg_ok(self) -> bool:
        """Absent means true; otherwise Java's `Boolean.parseBoolean` (only "true", any case, is true)."""
        return waits_for_store(self.properties.get(mc.WAIT_STORE_MSG_OK))

    @wait_store_msg_ok.setter
    def wait_store_msg_ok(self, value: bool) -> None:
        self.properties[mc.WAIT_STORE_MSG_OK] = "true" if value else "false"

    @property
    def unique_key(self) -> str | None:
        """The client-generated id (UNIQ_KEY), if set."""
        return self.properties.get(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @unique_key.setter
    def unique_key(self, value: str | None) -> None:
        self._set(mc.UNIQ_CLIENT_MESSAGE_ID_KEYIDX, value)

    # --- user properties ----------------------------------------------------

    def put_user_property(self, name: str, value: str) -> None:
        """Set a user property.

        Raises `MessageValidationError` for an empty name or value, a name
        RocketMQ reserves (§5.6), or a separator character (0x01/0x02) that
        would corrupt the property string.
        """
        if not name or not value:
            raise MessageValidationError(f"user property name and value must be non-empty: {name!r}={value!r}")
        if name in mc.RESERVED_NAMES:
            raise MessageValidationError(f"The Property<{name}> is used by system, input another please")
        for text in (name, value):
            if mc.NAME_VALUE_SEPARATOR in text or mc.PROPERTY_SEPARATOR in text:
                raise MessageValidationError(f"user property contains a separator character: {text!r}")
        self.properties[name] = value

    def get_user_property(self, name: str) -> str | None:
        return self.properties.get(name)

    @property
    def user_properties(self) -> dict[str, str]:
        """Properties whose names RocketMQ does not reserve."""
        return {k: v for k, v in self.properties.items() if k not in mc.RESERVED_NAMES}

    def _set(self, name: str, value: str | None) -> None:
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value


@dataclass(slots=True)
class MessageExt(Message):
    """A message decoded from a stored record (§5.1).

    `msg_id` is what the Java client shows applications: UNIQ_KEY when the
    producer set one, else the offset message id. `offset_msg_id` is always
    the broker-assigned id built from the store host and `commit_log_offset`.
    """

    queue_id: int = 0
    store_size: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = ""
    store_timestamp: int = 0
    store_host: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    commit_log_offset: int = 0
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0

    @property
    def transaction_type(self) -> int:
        """The sysflag's transaction bits: 0, 0x4 prepared, 0x8 commit, 0xC rollback."""
        return self.sys_flag & TRANSACTION_TYPE_MASK


@dataclass(slots=True)
class MessageExtBrokerInner(MessageExt):
    """What the broker hands the store to append.

    `properties_string` is the encoded form of `properties` that will be
    written to the record; whoever changes `properties` afterwards must call
    `refresh_properties_string()`. `tags_code` is the ConsumeQueue tag slot
    (§5.10; the delivery time for the schedule topic).
    """

    properties_string: str = ""
    tags_code: int = 0
    #: Whether the put is answered only once flushed (SYNC_FLUSH) and replicated (SYNC_MASTER). The send
    #: path sets it from the producer's WAIT, which it leaves out of the stored properties (as 4.9.7
    #: does); None: as the WAIT property says (messages the broker re-puts from stored ones).
    wait_store: bool | None = None

    def refresh_properties_string(self) -> None:
        """Re-encode `properties` into `properties_string`."""
        self.properties_string = mc.encode_properties(self.properties)

    @property
    def waits_for_store(self) -> bool:
        """`wait_store`, else the WAIT property (absent or "true" means wait)."""
        return self.wait_store_msg_ok if self.wait_store is None else self.wait_store


@dataclass(slots=True)
class MessageExtBatch:
    """A batch send (§5.8): the encoded items plus the fields they share.

    `body` is the `SEND_BATCH_MESSAGE` body exactly as received (items back to
    back); `properties_string` holds the batch-level properties the broker
    appends to each item's own.
    """

    topic: str
    queue_id: int
    body: bytes | bytearray | memoryview
    properties_string: str = ""
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = ""
    store_host: str = ""
    store_timestamp: int = 0
    reconsume_times: int = 0
    flag: int = 0
    #: The batch's WAIT (kept in `properties_string` too, as 4.9.7 stores it): answer once flushed.
    wait_store: bool = True

    @property
    def properties(self) -> dict[str, str]:
        """The batch-level properties decoded."""
        return mc.decode_properties(self.properties_string)
