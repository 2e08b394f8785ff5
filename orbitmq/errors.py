"""One explicit hierarchy of OrbitMQ errors.

`OrbitMQError` is the root. Classes state their policy (`retriable`) so retry
loops read the exception instead of keeping lists of types. `BrokerError`
carries RocketMQ's response `code` and `remark`; `BrokerError.for_code(code)`
picks the most specific subclass from a table built from the subclasses.
"""

from __future__ import annotations

from typing import ClassVar


class OrbitMQError(Exception):
    """Root of every error OrbitMQ raises on purpose."""

    retriable: ClassVar[bool] = False


class ConfigError(OrbitMQError, ValueError):
    """A configuration key or value is unknown or malformed."""


# --- remoting -----------------------------------------------------------------


class RemotingError(OrbitMQError):
    """A failure of the connection or of the frame layer."""

    retriable = True


class ConnectError(RemotingError, ConnectionError):
    """Could not connect to a peer, or the connection was lost."""


class RequestTimeout(RemotingError, TimeoutError):
    """No response arrived within the timeout."""


class FrameError(RemotingError):
    """Bytes that are not a valid RocketMQ remoting frame."""

    retriable = False


class HeaderError(OrbitMQError, ValueError):
    """A command's custom header (extFields) lacks a required field or has a malformed value.

    A server answers the request with SYSTEM_ERROR and this text as remark.
    """


# --- store --------------------------------------------------------------------


class StoreError(OrbitMQError):
    """A failure of the message store."""


class CorruptRecord(StoreError):
    """A stored record fails its magic code, size or CRC check."""


class StoreClosed(StoreError):
    """The store was used after it was closed."""


class MessageTooLarge(StoreError):
    """A message exceeds the configured maximum size."""


# --- broker responses -----------------------------------------------------------


class BrokerError(OrbitMQError):
    """A peer answered with a RocketMQ response code other than SUCCESS."""

    code: int = -1
    _by_code: ClassVar[dict[int, type[BrokerError]]] = {}
    response_code: ClassVar[int | None] = None

    def __init__(self, code: int, remark: str | None = None) -> None:
        self.code = code
        self.remark = remark or ""
        super().__init__(f"CODE: {code} DESC: {self.remark}")

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if cls.response_code is not None:
            BrokerError._by_code[cls.response_code] = cls

    @classmethod
    def for_code(cls, code: int, remark: str | None = None) -> BrokerError:
        """Build the most specific error class for a RocketMQ response code."""
        return BrokerError._by_code.get(code, BrokerError)(code, remark)


class SystemError_(BrokerError):
    response_code = 1
    retriable = True


class SystemBusy(BrokerError):
    response_code = 2
    retriable = True


class RequestCodeNotSupported(BrokerError):
    response_code = 3


class MessageIllegal(BrokerError):
    response_code = 13


class ServiceNotAvailable(BrokerError):
    response_code = 14
    retriable = True


class NoPermission(BrokerError):
    response_code = 16
    retriable = True


class TopicNotExist(BrokerError):
    response_code = 17
    retriable = True


class QueryNotFound(BrokerError):
    response_code = 22


class SubscriptionParseFailed(BrokerError):
    response_code = 23


class SubscriptionGroupNotExist(BrokerError):
    response_code = 26


class ConsumerNotOnline(BrokerError):
    response_code = 206


# --- client -------------------------------------------------------------------


class ClientError(OrbitMQError):
    """A client-side failure: bad arguments, no route, client not started."""


class MessageValidationError(ClientError, ValueError):
    """A message fails validation before it is sent."""


class NoRouteError(ClientError):
    """No route to the topic is known to any NameServer."""

    retriable = True
