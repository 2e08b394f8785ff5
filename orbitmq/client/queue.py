"""MessageQueue as clients name it; the value type lives in `orbitmq.common.queue`."""

from orbitmq.common.queue import MessageQueue

__all__ = ["MessageQueue"]
