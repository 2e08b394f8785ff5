"""Former home of `TopicLogHandler`; it lives in `orbitmq.client.logship` now.

Kept so that `from orbitmq.logship import TopicLogHandler` (the name older
READMEs gave) keeps working.
"""

from orbitmq.client.logship import BatchSender, TopicLogHandler

__all__ = ["BatchSender", "TopicLogHandler"]
