"""The records of the transaction protocol, built from a half message (pure functions, no I/O).

Protocol reference §6.8. A prepared message is stored as a *half message*:
topic RMQ_SYS_TRANS_HALF_TOPIC, queue 0, its real topic and queue in
REAL_TOPIC / REAL_QID, transaction bits of the sysflag cleared (so the store
indexes it like any message and the check service can read it back in order).
Resolving it writes:

* on commit, the real message: REAL_TOPIC/REAL_QID restored, sysflag
  COMMIT, TRAN_MSG removed, PREPAREDTRANSACTIONOFFSET = the half message's
  CommitLog offset;
* on commit and rollback, an *op record* in RMQ_SYS_TRANS_OP_HALF_TOPIC,
  queue 0, tag "d", whose body is the half message's queue offset as text.

A check re-appends the half message (`renewed_half`) with its check count
raised, so the count survives restarts and the queue stays in check order;
after transactionCheckMax checks it goes to TRANS_CHECK_MAX_TIME_TOPIC
(`discarded`).
"""

from __future__ import annotations

import time

from orbitmq.common import names
from orbitmq.common import properties as mc
from orbitmq.common.hashing import tag_hash_code
from orbitmq.common.message import MessageExt, MessageExtBrokerInner
from orbitmq.common.record import encode_record
from orbitmq.common.sysflag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_PREPARED_TYPE,
    TRANSACTION_TYPE_MASK,
)

HALF_QUEUE_ID = 0
OP_QUEUE_ID = 0


def is_prepared(sys_flag: int) -> bool:
    return sys_flag & TRANSACTION_TYPE_MASK == TRANSACTION_PREPARED_TYPE


def make_half(msg: MessageExtBrokerInner) -> None:
    """Rewrite a prepared message, in place, into the half message the store keeps."""
    msg.properties[mc.REAL_TOPIC] = msg.topic
    msg.properties[mc.REAL_QUEUE_ID] = str(msg.queue_id)
    msg.sys_flag = (msg.sys_flag & ~TRANSACTION_TYPE_MASK) | TRANSACTION_NOT_TYPE
    msg.topic = names.TRANS_HALF_TOPIC
    msg.queue_id = HALF_QUEUE_ID
    msg.refresh_properties_string()


def real_destination(half: MessageExt) -> tuple[str, int] | None:
    """(topic, queue id) the half message is meant for; None when its properties are unusable."""
    topic = half.properties.get(mc.REAL_TOPIC)
    raw_qid = half.properties.get(mc.REAL_QUEUE_ID)
    if not topic or raw_qid is None:
        return None
    try:
        return topic, int(raw_qid)
    except ValueError:
        return None


def _inner_from(half: MessageExt, topic: str, queue_id: int, properties: dict[str, str]) -> MessageExtBrokerInner:
    msg = MessageExtBrokerInner(
        topic=topic,
        body=bytes(half.body),
        flag=half.flag,
        properties=properties,
        queue_id=queue_id,
        sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        tags_code=tag_hash_code(properties.get(mc.TAGS)),
    )
    msg.refresh_properties_string()
    return msg


def committed(half: MessageExt) -> MessageExtBrokerInner:
    """The real message a commit writes. Raises ValueError when REAL_TOPIC/REAL_QID are missing."""
    dest = real_destination(half)
    if dest is None:
        raise ValueError("the half message lacks REAL_TOPIC/REAL_QID")
    props = dict(half.properties)
    for name in (mc.REAL_TOPIC, mc.REAL_QUEUE_ID, mc.TRANSACTION_PREPARED):
        props.pop(name, None)
    msg = _inner_from(half, dest[0], dest[1], props)
    msg.sys_flag = (msg.sys_flag & ~TRANSACTION_TYPE_MASK) | TRANSACTION_COMMIT_TYPE
    msg.prepared_transaction_offset = half.commit_log_offset
    return msg


def op_record(half_queue_offset: int, broker_addr: str, now_ms: int | None = None) -> MessageExtBrokerInner:
    """The op record marking the half message at `half_queue_offset` as resolved."""
    props = {mc.TAGS: names.TRANS_OP_REMOVE_TAG}
    msg = MessageExtBrokerInner(
        topic=names.TRANS_OP_HALF_TOPIC,
        body=str(half_queue_offset).encode(),
        properties=props,
        queue_id=OP_QUEUE_ID,
        born_timestamp=int(time.time() * 1000) if now_ms is None else now_ms,
        born_host=broker_addr,
        store_host=broker_addr,
        tags_code=tag_hash_code(names.TRANS_OP_REMOVE_TAG),
    )
    msg.refresh_properties_string()
    return msg


def parse_op_body(body: bytes) -> int | None:
    """The half queue offset an op record names (None when the body is not a number)."""
    try:
        return int(bytes(body).decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        return None


def check_times(half: MessageExt) -> int:
    try:
        return int(half.properties.get(mc.TRANSACTION_CHECK_TIMES, "0"))
    except ValueError:
        return 0


def immunity_ms(half: MessageExt, default_ms: int) -> int:
    """How long after its birth the message may first be checked (CHECK_IMMUNITY_TIME_IN_SECONDS)."""
    raw = half.properties.get(mc.CHECK_IMMUNITY_TIME_IN_SECONDS)
    if raw is None:
        return default_ms
    try:
        return max(int(raw) * 1000, 0)
    except ValueError:
        return default_ms


def renewed_half(half: MessageExt, half_queue_offset: int) -> MessageExtBrokerInner:
    """A copy of the half message appended at the queue's end, with one more check counted.

    The birth time is kept, so the message's age is measured from the
    producer's send; TRAN_PREPARED_QUEUE_OFFSET keeps the first copy's offset.
    """
    props = dict(half.properties)
    props[mc.TRANSACTION_CHECK_TIMES] = str(check_times(half) + 1)
    props.setdefault(mc.TRANSACTION_PREPARED_QUEUE_OFFSET, str(half_queue_offset))
    return _inner_from(half, names.TRANS_HALF_TOPIC, HALF_QUEUE_ID, props)


def resumed_half(half: MessageExt) -> MessageExtBrokerInner:
    """RESUME_CHECK_HALF_MESSAGE: the message put back in the half queue with no check counted yet."""
    props = dict(half.properties)
    props[mc.TRANSACTION_CHECK_TIMES] = "0"
    return _inner_from(half, names.TRANS_HALF_TOPIC, HALF_QUEUE_ID, props)


def discarded(half: MessageExt) -> MessageExtBrokerInner:
    """The copy kept in TRANS_CHECK_MAX_TIME_TOPIC after the last allowed check."""
    return _inner_from(half, names.TRANS_CHECK_MAX_TIME_TOPIC, 0, dict(half.properties))


def check_body(half: MessageExt) -> bytes:
    """CHECK_TRANSACTION_STATE's body: the half message in store encoding, real topic and queue restored."""
    dest = real_destination(half) or (half.topic, half.queue_id)
    return encode_record(
        topic=dest[0].encode(),
        body=half.body,
        properties=mc.encode_properties(half.properties).encode(),
        queue_id=dest[1],
        flag=half.flag,
        queue_offset=half.queue_offset,
        physical_offset=half.commit_log_offset,
        sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_timestamp=half.store_timestamp,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.prepared_transaction_offset,
    )
