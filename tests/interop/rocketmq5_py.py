"""Scenarios of the official RocketMQ 5 Python client (rocketmq-python-client) against OrbitMQ's gRPC front.

Run by tests/interop/test_rocketmq5.py in a child process (the client's generated protobuf modules
and OrbitMQ's own define the same apache.rocketmq.v2 names, which one process cannot hold):

    python rocketmq5_py.py SCENARIO ENDPOINT TOPIC [GROUP] [N]

Each scenario prints one line `RESULT <json>` and exits 0, or fails with a traceback. Every wait is
bounded by DEADLINE seconds.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    Message,
    MessageListener,
    Producer,
    PushConsumer,
    SimpleConsumer,
    TransactionChecker,
    TransactionResolution,
)

DEADLINE = 60.0


def config(endpoint: str) -> ClientConfiguration:
    return ClientConfiguration(endpoint, Credentials(), request_timeout=5)


def message(topic: str, body: bytes, **kw: Any) -> Message:
    m = Message()
    m.topic = topic
    m.body = body
    for key, value in kw.items():
        if key == "props":
            for k, v in value.items():
                m.add_property(k, v)
        else:
            setattr(m, key, value)
    return m


def show(m: Message) -> dict[str, Any]:
    return {
        "id": m.message_id, "body": m.body.decode(errors="replace"), "tag": m.tag, "keys": list(m.keys or []),
        "props": dict(m.properties or {}), "group": m.message_group, "attempt": m.delivery_attempt,
        "type": str(m.message_type), "delivery": m.delivery_timestamp, "topic": m.topic,
    }


def produce(endpoint: str, topic: str, n: int, **kw: Any) -> list[str]:
    p = Producer(config(endpoint), (topic,))
    p.startup()
    try:
        return [p.send(message(topic, f"m{i}".encode(), **kw)).message_id for i in range(n)]
    finally:
        p.shutdown()


def receive_all(c: SimpleConsumer, n: int, invisible: int = 15, ack: bool = True) -> list[Message]:
    got: list[Message] = []
    end = time.monotonic() + DEADLINE
    while len(got) < n and time.monotonic() < end:
        for m in c.receive(32, invisible) or []:
            got.append(m)
            if ack:
                c.ack(m)
    return got


def simple(endpoint: str, topic: str, group: str, await_s: int = 5) -> SimpleConsumer:
    c = SimpleConsumer(config(endpoint), group, {topic: FilterExpression()}, await_duration=await_s)
    c.startup()
    return c


def main() -> None:
    scenario, endpoint, topic = sys.argv[1:4]
    group = sys.argv[4] if len(sys.argv) > 4 else ""
    n = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    result: Any = None
    if scenario == "send":
        result = produce(endpoint, topic, n, tag="TagA", keys="k1", props={"color": "blue"})
    elif scenario == "send_fifo":
        p = Producer(config(endpoint), (topic,))
        p.startup()
        try:
            result = [p.send(message(topic, f"{g}:{i}".encode(), message_group=g)).message_id
                      for i in range(n) for g in ("ga", "gb", "gc")]
        finally:
            p.shutdown()
    elif scenario == "send_delay":
        at = int(time.time()) + n
        p = Producer(config(endpoint), (topic,))
        p.startup()
        try:
            mid = p.send(message(topic, b"later", delivery_timestamp=at)).message_id
        finally:
            p.shutdown()
        result = {"id": mid, "at": at}
    elif scenario == "recall":
        # A timed message recalled before it is due, and a later marker that is not.
        p = Producer(config(endpoint), (topic,))
        p.startup()
        try:
            now = int(time.time())
            receipt = p.send(message(topic, b"recalled", delivery_timestamp=now + 2))
            recalled = p.recall_message(topic, receipt.recall_handle)
            marker = p.send(message(topic, b"marker", delivery_timestamp=now + 3)).message_id
        finally:
            p.shutdown()
        result = {"id": receipt.message_id, "recalled": recalled, "handle": receipt.recall_handle, "marker": marker}
    elif scenario == "receive":
        c = simple(endpoint, topic, group)
        try:
            if n == 0:  # one receive (it also makes the group known), acking what comes
                got = c.receive(32, 15) or []
                for m in got:
                    c.ack(m)
            else:
                got = receive_all(c, n)
            result = [show(m) for m in got]
        finally:
            c.shutdown()
    elif scenario == "linger":
        # A consumer that stays online until its stdin closes (the admin tools list it meanwhile).
        c = simple(endpoint, topic, group)
        try:
            c.receive(1, 10)
            print("READY " + c.client_id, flush=True)
            sys.stdin.read()
        finally:
            c.shutdown()
        result = "bye"
    elif scenario == "linger_producer":
        p = Producer(config(endpoint), (topic,))
        p.startup()
        try:
            p.send(message(topic, b"hello"))
            print("READY " + p.client_id, flush=True)
            sys.stdin.read()
        finally:
            p.shutdown()
        result = "bye"
    elif scenario == "simple_roundtrip":
        c = simple(endpoint, topic, group)
        try:
            c.receive(1, 10)  # the group starts at the end of each queue: join before sending
            ids = produce(endpoint, topic, n, tag="TagA", keys="k1", props={"color": "blue"})
            got = receive_all(c, n)
            result = {"sent": ids, "got": [show(m) for m in got]}
        finally:
            c.shutdown()
    elif scenario == "fifo_roundtrip":
        c = simple(endpoint, topic, group)
        try:
            c.receive(1, 10)
            p = Producer(config(endpoint), (topic,))
            p.startup()
            try:
                for i in range(n):
                    for g in ("ga", "gb", "gc"):
                        p.send(message(topic, f"{g}:{i}".encode(), message_group=g))
            finally:
                p.shutdown()
            result = [show(m) for m in receive_all(c, 3 * n)]
        finally:
            c.shutdown()
    elif scenario == "fifo_batches":
        # GROUP is "orderly,plain": both groups join, N messages of one message group are sent, and each
        # group takes two batches of 2 before acking anything, then the rest (acking as it goes).
        consumers = {g: simple(endpoint, topic, g) for g in group.split(",")}
        try:
            for c in consumers.values():
                c.receive(1, 10)  # a new group starts at the end of each queue: join before sending
            p = Producer(config(endpoint), (topic,))
            p.startup()
            try:
                for i in range(n):
                    p.send(message(topic, f"ga:{i}".encode(), message_group="ga"))
            finally:
                p.shutdown()
            result = {}
            for g, c in consumers.items():
                first: list[Message] = []
                end = time.monotonic() + DEADLINE
                while not first and time.monotonic() < end:
                    first = c.receive(2, 20) or []
                second = c.receive(2, 20) or []  # nothing acked yet
                for m in first + second:
                    c.ack(m)
                rest = receive_all(c, n - len(first) - len(second))
                result[g] = {"first": [show(m) for m in first], "second": [show(m) for m in second],
                             "rest": [show(m) for m in rest]}
        finally:
            for c in consumers.values():
                c.shutdown()
    elif scenario == "delay_roundtrip":
        c = simple(endpoint, topic, group)
        try:
            c.receive(1, 10)
            at = int(time.time()) + n
            p = Producer(config(endpoint), (topic,))
            p.startup()
            try:
                p.send(message(topic, b"later", delivery_timestamp=at))
            finally:
                p.shutdown()
            got = receive_all(c, 1)
            result = {"at": at, "received_at": time.time(), "got": [show(m) for m in got]}
        finally:
            c.shutdown()
    elif scenario == "redeliver":
        c = simple(endpoint, topic, group)
        try:
            c.receive(1, 10)
            produce(endpoint, topic, 1)
            first = receive_all(c, 1, ack=False)
            c.change_invisible_duration(first[0], 1)  # expires in one second
            again = receive_all(c, 1, ack=True)
            result = [show(first[0]), show(again[0])]
        finally:
            c.shutdown()
    elif scenario == "nack_to_dlq":
        # The group allows n deliveries (retryMaxTimes n-1); each one is refused until the broker gives up.
        c = simple(endpoint, topic, group)
        try:
            c.receive(1, 10)
            produce(endpoint, topic, 1)
            attempts = []
            end = time.monotonic() + DEADLINE
            while len(attempts) < n and time.monotonic() < end:
                for m in c.receive(1, 10) or []:
                    attempts.append(m.delivery_attempt)
                    c.change_invisible_duration(m, 1)
            # One more look: nothing comes back once the message is in the DLQ.
            extra = c.receive(1, 10) or []
            result = {"attempts": attempts, "after": len(extra)}
        finally:
            c.shutdown()
    elif scenario == "push_fifo":
        seen: list[dict[str, Any]] = []
        all_in = threading.Event()

        class FifoListener(MessageListener):
            def consume(self, m: Message) -> ConsumeResult:
                seen.append(show(m))
                if len(seen) >= 3 * n:
                    all_in.set()
                return ConsumeResult.SUCCESS

        c = PushConsumer(config(endpoint), group, FifoListener(), {topic: FilterExpression()})
        c.startup()
        try:
            p = Producer(config(endpoint), (topic,))
            p.startup()
            try:
                for i in range(n):
                    for g in ("ga", "gb", "gc"):
                        p.send(message(topic, f"{g}:{i}".encode(), message_group=g))
            finally:
                p.shutdown()
            all_in.wait(DEADLINE)
            result = {"fifo": c.fifo, "got": seen}  # fifo: what the server's Settings told the consumer
        finally:
            c.shutdown()
    elif scenario == "push_fifo_fail":
        # An orderly group: the PushConsumer retries a failed message itself, as often as the Settings'
        # max_attempts allow and with their backoff, then forwards it to the DLQ.
        calls: list[float] = []
        tried = threading.Event()
        third = threading.Event()

        class Failing(MessageListener):
            def consume(self, m: Message) -> ConsumeResult:
                calls.append(time.monotonic())
                if len(calls) >= n:
                    tried.set()
                if len(calls) > n:
                    third.set()
                return ConsumeResult.FAILURE

        c = PushConsumer(config(endpoint), group, Failing(), {topic: FilterExpression()})
        c.startup()
        try:
            produce(endpoint, topic, 1)
            tried.wait(DEADLINE)
            third.wait(4)  # the forward to the DLQ follows the last attempt; no further attempt may come
            result = {"fifo": c.fifo, "calls": len(calls)}
        finally:
            c.shutdown()
    elif scenario == "push":
        got: list[dict[str, Any]] = []
        done = threading.Event()

        class Listener(MessageListener):
            def consume(self, m: Message) -> ConsumeResult:
                got.append(show(m))
                if len(got) >= n:
                    done.set()
                return ConsumeResult.SUCCESS

        c = PushConsumer(config(endpoint), group, Listener(), {topic: FilterExpression()})
        c.startup()
        try:
            produce(endpoint, topic, n)
            done.wait(DEADLINE)
            result = got
        finally:
            c.shutdown()
    elif scenario in ("tx_commit", "tx_rollback"):
        answer = TransactionResolution.COMMIT if scenario == "tx_commit" else TransactionResolution.ROLLBACK
        p = Producer(config(endpoint), (topic,), checker=Checker(answer))
        p.startup()
        try:
            tx = p.begin_transaction()
            receipt = p.send(message(topic, scenario.encode()), tx)
            tx.commit() if scenario == "tx_commit" else tx.rollback()
            result = {"id": receipt.message_id, "tx": receipt.transaction_id}
        finally:
            p.shutdown()
    elif scenario == "tx_orphan":
        checker = Checker(TransactionResolution.COMMIT)
        p = Producer(config(endpoint), (topic,), checker=checker)
        p.startup()
        # A group of its own, joined before the commit, sees the message once the checker's
        # EndTransaction (sent after check() returns) has committed it: the producer stays up till then.
        watch = simple(endpoint, topic, f"orphan-watch-{topic}")
        try:
            watch.receive(1, 10)  # the group starts at the end of each queue: join before the commit
            tx = p.begin_transaction()
            receipt = p.send(message(topic, b"orphan"), tx)  # never committed by the producer
            checker.asked.wait(DEADLINE)
            committed = [m.message_id for m in receive_all(watch, 1)]
            result = {"id": receipt.message_id, "checked": checker.ids, "committed": committed}
        finally:
            watch.shutdown()
            p.shutdown()
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    print("RESULT " + json.dumps(result), flush=True)


class Checker(TransactionChecker):
    def __init__(self, answer: TransactionResolution) -> None:
        self.answer = answer
        self.asked = threading.Event()
        self.ids: list[str] = []

    def check(self, message: Message) -> TransactionResolution:
        self.ids.append(message.message_id)
        self.asked.set()
        return self.answer


if __name__ == "__main__":
    main()
