"""A producer and a pull consumer that speak to the cluster as RocketMQ 4.9's Java client does,
frame by frame (tests/conformance/wire.py), without OrbitMQ's client code.

`JavaProducer.send` follows DefaultMQProducerImpl.sendDefaultImpl: the route from the NameServer
(GET_ROUTEINFO_BY_TOPIC, fastjson bodies), the writable queues of the groups that have a master
(brokerId 0), round-robin queue choice skipping brokers that latency fault avoidance marks
unavailable (MQFaultStrategy with sendLatencyFaultEnable), SEND_MESSAGE_V2 with the letter
header, and a retry on another broker after a refusal or a connection failure while the send
timeout lasts. The route is looked up again only by the periodic poll (`poll_s`; Java's
pollNameServerInterval, 30 s), never because a send failed, as 4.9 does.

`JavaPuller` follows pullKernelImpl: PULL_MESSAGE to the broker the last answer suggested
(suggestWhichBrokerId; the master first), any other replica of the group when that one is gone,
offsets kept in memory (as a consumer that lost its broker-side offsets would).

Both record into a History (tests/support/history.py). They are blocking: run them in a thread
whose network namespace is the client host's.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

from tests.conformance.wire import Conn, decode_records, encode_properties, fastjson_loads
from tests.support.history import History, Outcome

GET_ROUTEINFO_BY_TOPIC = 105
SEND_MESSAGE_V2 = 310
PULL_MESSAGE = 11
PERM_WRITE = 2
#: Stored but not confirmed as asked (FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE).
STORED_UNCONFIRMED = {10, 11, 12}
#: Refused before storing: SYSTEM_BUSY, SERVICE_NOT_AVAILABLE, NO_PERMISSION, TOPIC_NOT_EXIST.
REFUSED = {2, 14, 16, 17}
#: MQFaultStrategy's tables.
LATENCY_MAX_MS = (50, 100, 550, 1000, 2000, 3000, 15000)
NOT_AVAILABLE_MS = (0, 0, 30000, 60000, 120000, 180000, 600000)


def _not_available_ms(latency_ms: float) -> int:
    for limit, duration in zip(reversed(LATENCY_MAX_MS), reversed(NOT_AVAILABLE_MS)):
        if latency_ms >= limit:
            return duration
    return 0


class _Conns:
    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.open: dict[str, Conn] = {}

    def call(self, addr: str, code: int, ext: dict[str, str] | None, body: bytes = b"", timeout: float | None = None) -> Any:
        conn = self.open.get(addr)
        try:
            if conn is None:
                conn = self.open[addr] = Conn(addr, timeout or self.timeout)
            conn.sock.settimeout(timeout or self.timeout)
            return conn.java(code, ext, body)
        except (OSError, ConnectionError):
            self.drop(addr)
            raise

    def drop(self, addr: str) -> None:
        conn = self.open.pop(addr, None)
        if conn is not None:
            conn.close()

    def close(self) -> None:
        for addr in list(self.open):
            self.drop(addr)


class JavaProducer:
    def __init__(self, namesrv: str, history: History, group: str = "PG_java", *, timeout: float = 3.0,
                 retries: int = 2, fault_avoidance: bool = True, poll_s: float = 30.0) -> None:
        self.namesrv = namesrv
        self.history = history
        self.group = group
        self.timeout = timeout
        self.retries = retries
        self.fault_avoidance = fault_avoidance
        self.conns = _Conns(timeout)
        self.routes: dict[str, tuple[list[tuple[str, int]], dict[str, str]]] = {}
        self.poll_s = poll_s
        self.polled: dict[str, float] = {}
        self.available_from: dict[str, float] = {}
        self.counter = itertools.count()

    def route(self, topic: str, refresh: bool = False) -> tuple[list[tuple[str, int]], dict[str, str]]:
        """(writable (brokerName, queueId) of groups with a master, brokerName -> master address)."""
        if refresh or topic not in self.routes or time.monotonic() - self.polled.get(topic, 0.0) >= self.poll_s:
            reply = self.conns.call(self.namesrv, GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
            self.polled[topic] = time.monotonic()
            if reply.code != 0:
                # As MQClientInstance: a failed lookup keeps the route known before.
                return self.routes.get(topic, ([], {}))
            route = fastjson_loads(reply.body)
            masters = {bd["brokerName"]: bd["brokerAddrs"]["0"] for bd in route["brokerDatas"]
                       if "0" in bd["brokerAddrs"]}
            queues = [(qd["brokerName"], i)
                      for qd in sorted(route["queueDatas"], key=lambda q: q["brokerName"])
                      if qd["perm"] & PERM_WRITE and qd["brokerName"] in masters
                      for i in range(qd["writeQueueNums"])]
            self.routes[topic] = (queues, masters)
        return self.routes[topic]

    def _select(self, queues: list[tuple[str, int]], last: str | None) -> tuple[str, int]:
        start = next(self.counter)
        now = time.monotonic()
        if self.fault_avoidance:
            for i in range(len(queues)):
                broker, qid = queues[(start + i) % len(queues)]
                if self.available_from.get(broker, 0.0) <= now:
                    return broker, qid
        for i in range(len(queues)):
            broker, qid = queues[(start + i) % len(queues)]
            if broker != last:
                return broker, qid
        return queues[start % len(queues)]

    def _fault(self, broker: str, latency_ms: float) -> None:
        self.available_from[broker] = time.monotonic() + _not_available_ms(latency_ms) / 1000

    def send(self, topic: str, key: str, *, stream: str | None = None, seq: int | None = None) -> Outcome:
        deadline = time.monotonic() + self.timeout
        last: str | None = None
        unsure = False
        for _ in range(1 + self.retries):
            if time.monotonic() >= deadline:
                break
            try:
                queues, masters = self.route(topic)
            except (OSError, ConnectionError):
                queues, masters = self.routes.get(topic, ([], {}))
            if not queues:
                continue
            broker, qid = self._select(queues, last)
            last = broker
            header = {
                "a": self.group, "b": topic, "c": "TBW102", "d": "4", "e": str(qid), "f": "0",
                "g": str(int(time.time() * 1000)), "h": "0",
                "i": encode_properties({"UNIQ_KEY": key, "KEYS": key, "WAIT": "true"}),
                "j": "0", "k": "false", "m": "false",
            }
            started = time.monotonic()
            try:
                reply = self.conns.call(masters[broker], SEND_MESSAGE_V2, header, key.encode(),
                                        timeout=max(deadline - started, 0.01))
            except (OSError, ConnectionError):
                unsure = True  # the request may have been stored before the connection failed
                self._fault(broker, 30000)
                continue
            latency = (time.monotonic() - started) * 1000
            if reply.code == 0:
                self._fault(broker, latency)
                self.history.send(key, Outcome.ACKED, queue=f"{broker}:{reply.ext['queueId']}", stream=stream,
                                  seq=seq, at=time.monotonic(), broker=broker)
                return Outcome.ACKED
            if reply.code in STORED_UNCONFIRMED:
                self.history.send(key, Outcome.UNKNOWN, stream=stream, seq=seq, at=time.monotonic(), broker=broker)
                return Outcome.UNKNOWN
            self._fault(broker, 30000)
            if reply.code not in REFUSED:
                unsure = True
        outcome = Outcome.UNKNOWN if unsure else Outcome.FAILED
        self.history.send(key, outcome, stream=stream, seq=seq, at=time.monotonic())
        return outcome

    def close(self) -> None:
        self.conns.close()


class JavaPuller:
    def __init__(self, namesrv: str, history: History, group: str = "CG_java", *, timeout: float = 1.0,
                 consumer: str = "java") -> None:
        self.namesrv = namesrv
        self.history = history
        self.group = group
        self.consumer = consumer
        self.conns = _Conns(timeout)
        self.offsets: dict[tuple[str, int], int] = {}
        self.routes: dict[str, tuple[list[tuple[str, int]], dict[str, dict[int, str]]]] = {}
        self.suggested: dict[tuple[str, int], int] = {}

    def _route(self, topic: str) -> tuple[list[tuple[str, int]], dict[str, dict[int, str]]]:
        try:
            reply = self.conns.call(self.namesrv, GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        except (OSError, ConnectionError):
            return self.routes.get(topic, ([], {}))
        if reply.code != 0:
            # As MQClientInstance: a failed lookup keeps the route known before.
            return self.routes.get(topic, ([], {}))
        route = fastjson_loads(reply.body)
        addrs = {bd["brokerName"]: {int(k): v for k, v in bd["brokerAddrs"].items()} for bd in route["brokerDatas"]}
        queues = [(qd["brokerName"], i) for qd in route["queueDatas"] for i in range(qd["readQueueNums"])]
        self.routes[topic] = (queues, addrs)
        return queues, addrs

    def pull_round(self, topic: str) -> int:
        """One PULL_MESSAGE per queue (no suspension); how many messages came."""
        queues, addrs = self._route(topic)
        found = 0
        failed: set[str] = set()  # a broker that did not answer this round is not asked again in it
        for broker, qid in queues:
            replicas = addrs.get(broker, {})
            if not replicas:
                continue
            want = self.suggested.get((broker, qid), 0)
            addr = replicas.get(want) or replicas.get(0) or replicas[min(replicas)]
            offset = self.offsets.get((broker, qid), 0)
            if addr in failed:
                continue
            try:
                reply = self.conns.call(addr, PULL_MESSAGE, {
                    "consumerGroup": self.group, "topic": topic, "queueId": str(qid), "queueOffset": str(offset),
                    "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
                    "subscription": "*", "subVersion": "0", "expressionType": "TAG"})
            except (OSError, ConnectionError):
                self.suggested.pop((broker, qid), None)
                failed.add(addr)
                continue
            if "suggestWhichBrokerId" in reply.ext:
                self.suggested[(broker, qid)] = int(reply.ext["suggestWhichBrokerId"])
            if reply.code == 0:
                for record in decode_records(reply.body):
                    self.history.receive(record.body.decode(errors="replace"), queue=f"{broker}:{qid}",
                                         consumer=self.consumer, at=time.monotonic())
                    found += 1
            if reply.code in (0, 19, 20, 21) and "nextBeginOffset" in reply.ext:
                self.offsets[(broker, qid)] = int(reply.ext["nextBeginOffset"])
        return found

    def drain(self, topic: str, until_keys: set[str], timeout: float = 30.0) -> None:
        """Pull rounds until every key in `until_keys` was delivered (or the time is up)."""
        deadline = time.monotonic() + timeout
        while not until_keys <= self.history.delivered_keys():
            if time.monotonic() > deadline:
                return
            if self.pull_round(topic) == 0:
                time.sleep(0.1)

    def close(self) -> None:
        self.conns.close()
