"""One explicit hierarchy of OrbitMQ errors.

`OrbitMQError` is the root. Classes state their policy (`retriable`) so retry
loops read the exception instead of keeping lists of types. `BrokerError`
carries RocketMQ's response `code` and `remark`; `BrokerError.for_code(code)`
picks the most specific subclass from a table built from the subclasses.
"""

from __future__ import annotations

from typing import ClassVar

from orbitmq.remoting.codes import ResponseCode


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
    """A RocketMQ response code other than SUCCESS, with its remark.

    Both sides use it: a broker handler raises one to refuse a request (the
    connection answers it with `code` and `remark`, see
    `remoting.connection`), and a client raises one for a refusal it received
    (`BrokerError.for_code`). Each subclass names one response code and states
    whether a producer tries another broker after it (`retriable`): the codes
    of RocketMQ 5's DefaultMQProducer.retryResponseCodes (4.x's six plus
    SYSTEM_BUSY, a busy broker being the case where another broker helps most).
    """

    #: The response code a subclass stands for (None: the base, any code).
    response_code: ClassVar[int | None] = None
    _by_code: ClassVar[dict[int, type[BrokerError]]] = {}

    def __init__(self, remark: str | None = None, *, code: int | None = None) -> None:
        if code is None:
            code = self.response_code if self.response_code is not None else ResponseCode.SYSTEM_ERROR
        self.code = int(code)
        self.remark = remark or ""
        super().__init__(f"CODE: {self.code} DESC: {self.remark}")

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("response_code")
        if code is not None:
            BrokerError._by_code.setdefault(code, cls)

    def __reduce__(self) -> tuple[object, tuple[type[BrokerError], str, int]]:
        # Pickled (e.g. across processes) as class, remark and code, not as the formatted message.
        return _rebuild_broker_error, (type(self), self.remark, self.code)

    @classmethod
    def for_code(cls, code: int, remark: str | None = None) -> BrokerError:
        """The most specific error class for a RocketMQ response code, built with `remark`."""
        return BrokerError._by_code.get(int(code), BrokerError)(remark, code=code)


def _rebuild_broker_error(cls: type[BrokerError], remark: str, code: int) -> BrokerError:
    return cls(remark, code=code)


class SystemError_(BrokerError):
    response_code = ResponseCode.SYSTEM_ERROR
    retriable = True


class SystemBusy(BrokerError):
    response_code = ResponseCode.SYSTEM_BUSY
    retriable = True


class RequestCodeNotSupported(BrokerError):
    response_code = ResponseCode.REQUEST_CODE_NOT_SUPPORTED


class TransactionFailed(BrokerError):
    response_code = ResponseCode.TRANSACTION_FAILED


class SlaveNotAvailable(BrokerError):
    response_code = ResponseCode.SLAVE_NOT_AVAILABLE


class MessageIllegal(BrokerError):
    response_code = ResponseCode.MESSAGE_ILLEGAL


class ServiceNotAvailable(BrokerError):
    response_code = ResponseCode.SERVICE_NOT_AVAILABLE
    retriable = True


class VersionNotSupported(BrokerError):
    response_code = ResponseCode.VERSION_NOT_SUPPORTED


class NoPermission(BrokerError):
    response_code = ResponseCode.NO_PERMISSION
    retriable = True


class TopicNotExist(BrokerError):
    response_code = ResponseCode.TOPIC_NOT_EXIST
    retriable = True


class TopicExistAlready(BrokerError):
    response_code = ResponseCode.TOPIC_EXIST_ALREADY


class QueryNotFound(BrokerError):
    response_code = ResponseCode.QUERY_NOT_FOUND


class SubscriptionParseFailed(BrokerError):
    response_code = ResponseCode.SUBSCRIPTION_PARSE_FAILED


class SubscriptionNotExist(BrokerError):
    response_code = ResponseCode.SUBSCRIPTION_NOT_EXIST


class SubscriptionNotLatest(BrokerError):
    response_code = ResponseCode.SUBSCRIPTION_NOT_LATEST


class SubscriptionGroupNotExist(BrokerError):
    response_code = ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


class NoBuyerId(BrokerError):
    response_code = ResponseCode.NO_BUYER_ID
    retriable = True


class NotInCurrentUnit(BrokerError):
    response_code = ResponseCode.NOT_IN_CURRENT_UNIT
    retriable = True


class ConsumerNotOnline(BrokerError):
    response_code = ResponseCode.CONSUMER_NOT_ONLINE


class FlowControl(BrokerError):
    response_code = ResponseCode.FLOW_CONTROL


class NoMessage(BrokerError):
    """208: a POP ack or change-invisible names an offset outside its queue (RocketMQ 5)."""

    response_code = ResponseCode.NO_MESSAGE


class InvalidParameter(BrokerError):
    response_code = ResponseCode.INVALID_PARAMETER


class PollingFull(BrokerError):
    """209 as RocketMQ 5 answers a POP that may not park (4.x used 209 for an ACL failure, so the
    code is not registered for `for_code`)."""

    def __init__(self, remark: str | None = None, *, code: int | None = None) -> None:
        super().__init__(remark, code=ResponseCode.POLLING_FULL if code is None else code)


class PollingTimeout(BrokerError):
    """210 as RocketMQ 5 answers a POP whose long poll ended empty (not registered, as 209)."""

    def __init__(self, remark: str | None = None, *, code: int | None = None) -> None:
        super().__init__(remark, code=ResponseCode.POLLING_TIMEOUT if code is None else code)


class DiskFull(ServiceNotAvailable):
    """The broker's disk refused a write for lack of space (answered 14 SERVICE_NOT_AVAILABLE)."""


# --- client -------------------------------------------------------------------


class ClientError(OrbitMQError):
    """A client-side failure: bad arguments, no route, client not started."""


class MessageValidationError(ClientError, ValueError):
    """A message fails validation before it is sent."""


class NoRouteError(ClientError):
    """No route to the topic is known to any NameServer."""

    retriable = True
