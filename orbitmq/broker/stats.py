"""Message counters for GET_BROKER_RUNTIME_INFO and GET_CONSUME_STATS, as pure state.

Counts messages put and got in total, per day (the "today morning" and
"yesterday morning" totals RocketMQ reports), and per (group, topic) pulls;
rates come from `sample(now)` calls every few seconds. The clock is passed in.

It also keeps the traffic counters the Prometheus endpoint (orbitmq/metrics/)
reads at scrape time: messages, bytes and a message size histogram per
(topic, message type) stored, bytes per (group, topic) delivered, the next
offset each group pulled per queue, and a request latency histogram per
(request code, response code). Each is a plain dict and int add on the
request path; nothing is formatted until a scrape asks.

Owned by the broker's event loop; not thread-safe.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections import deque
from collections.abc import Callable

#: BrokerStatsData's windows (statsMinute, statsHour, statsDay) in ms. Each keeps about sixty
#: snapshots of the per-(group, topic) counters, so a window's figures cover between the
#: window and a sixtieth more (plus one sample interval).
GET_WINDOWS_MS = (60_000, 3_600_000, 86_400_000)

#: rocketmq_message_size's bucket upper bounds in bytes (RocketMQ 5's).
MESSAGE_SIZE_BOUNDS = (1024, 4096, 524_288, 1_048_576, 2_097_152, 4_194_304)
#: rocketmq_rpc_latency's bucket upper bounds in milliseconds (RocketMQ 5's).
RPC_LATENCY_BOUNDS_MS = (1, 3, 5, 7, 10, 100, 1000, 2000, 3000)

#: Index of the message count and byte total in a `PutCounters` list; buckets follow.
PUT_MESSAGES, PUT_BYTES, PUT_BUCKETS = 0, 1, 2
#: Index of the millisecond sum in an `RpcCounters` list; buckets follow (their sum is the count).
RPC_SUM_MS, RPC_BUCKETS = 0, 1
SMALLEST_SIZE = MESSAGE_SIZE_BOUNDS[0]

#: [messages, bytes, bucket 0, ..., bucket +Inf] (per-bucket counts, not cumulative).
PutCounters = list[int]
#: [latency sum (ms, float), bucket 0, ..., bucket +Inf].
RpcCounters = list[float]


def _day(now_ms: int) -> int:
    """A number that changes at local midnight."""
    t = time.localtime(now_ms / 1000)
    return t.tm_year * 400 + t.tm_yday


class BrokerStats:
    def __init__(self, clock_ms: Callable[[], int]) -> None:
        self._clock_ms = clock_ms
        self.boot_timestamp = clock_ms()
        self.put_total = 0
        self.get_total = 0
        self._day = _day(self.boot_timestamp)
        self.put_today_morning = 0
        self.put_yesterday_morning = 0
        self.get_today_morning = 0
        self.get_yesterday_morning = 0
        self._group_gets: dict[tuple[str, str], int] = {}
        self._group_pulls: dict[tuple[str, str], int] = {}
        self._expired: dict[tuple[str, str], int] = {}
        # Per window: (sample time, gets, pulls) snapshots, oldest first; the first one is the baseline.
        self._get_history: dict[int, deque[tuple[int, dict[tuple[str, str], int], dict[tuple[str, str], int]]]] = {
            w: deque([(self.boot_timestamp, {}, {})]) for w in GET_WINDOWS_MS
        }
        # Rates from the last two samples.
        self._last_sample_ms = self.boot_timestamp
        self._last_put = 0
        self._last_get = 0
        self._last_group_gets: dict[tuple[str, str], int] = {}
        self.put_tps = 0.0
        self.get_tps = 0.0
        self.group_tps: dict[tuple[str, str], float] = {}
        #: (stored topic, message type) -> PutCounters.
        self.puts: dict[tuple[str, str], PutCounters] = {}
        #: (group, topic) -> bytes delivered by pulls.
        self.get_bytes: dict[tuple[str, str], int] = {}
        #: (group, topic) -> queue id -> the next offset the group's last pull of it returned.
        self.pull_offsets: dict[tuple[str, str], dict[int, int]] = {}
        #: (request code, response code) -> RpcCounters; response code -1: no response (oneway).
        self.rpc: dict[tuple[int, int], RpcCounters] = {}
        #: (group, original topic) -> messages sent to the group's dead letter topic.
        self.dlq_puts: dict[tuple[str, str], int] = {}

    def record_expired(self, group: str, topic: str, count: int) -> None:
        """Messages a pull of `group` skipped because their TTL passed (broker/expiry.py)."""
        key = (group, topic)
        self._expired[key] = self._expired.get(key, 0) + count

    def expired_counts(self) -> dict[tuple[str, str], int]:
        """(group, topic) -> messages not delivered to the group because they expired, since start."""
        return dict(self._expired)

    def record_put(self, count: int, topic: str = "", size: int = 0, message_type: str = "normal") -> None:
        """`count` messages of `size` bytes in all stored under `topic` (as stored, after
        delay or transaction routing)."""
        self.put_total += count
        if not topic:
            return
        counters = self.puts.get((topic, message_type))
        if counters is None:
            counters = self.puts[(topic, message_type)] = [0] * (PUT_BUCKETS + len(MESSAGE_SIZE_BOUNDS) + 1)
        counters[PUT_MESSAGES] += count
        counters[PUT_BYTES] += size
        each = size if count == 1 else size // count
        counters[PUT_BUCKETS if each <= SMALLEST_SIZE else PUT_BUCKETS + bisect_left(MESSAGE_SIZE_BOUNDS, each)] += count

    def record_get(
        self, group: str, topic: str, count: int, size: int = 0, queue_id: int = -1, next_offset: int = -1
    ) -> None:
        self.get_total += count
        key = (group, topic)
        self._group_gets[key] = self._group_gets.get(key, 0) + count
        self._group_pulls[key] = self._group_pulls.get(key, 0) + 1
        if size:
            self.get_bytes[key] = self.get_bytes.get(key, 0) + size
        if queue_id >= 0:
            self.record_pull_offset(group, topic, queue_id, next_offset)

    def group_gets(self) -> dict[tuple[str, str], int]:
        """(group, topic) -> messages delivered to the group by pulls (live view, read only)."""
        return self._group_gets

    def record_pull_offset(self, group: str, topic: str, queue_id: int, next_offset: int) -> None:
        """Where the group's next pull of the queue starts (its in-flight messages end there)."""
        queues = self.pull_offsets.get((group, topic))
        if queues is None:
            queues = self.pull_offsets[(group, topic)] = {}
        queues[queue_id] = next_offset

    def record_rpc(self, request_code: int, response_code: int, elapsed_ms: float) -> None:
        counters = self.rpc.get((request_code, response_code))
        if counters is None:
            counters = self.rpc[(request_code, response_code)] = [0.0] * (RPC_BUCKETS + len(RPC_LATENCY_BOUNDS_MS) + 1)
        counters[RPC_SUM_MS] += elapsed_ms
        counters[RPC_BUCKETS + bisect_left(RPC_LATENCY_BOUNDS_MS, elapsed_ms)] += 1

    def record_dlq(self, group: str, topic: str) -> None:
        key = (group, topic)
        self.dlq_puts[key] = self.dlq_puts.get(key, 0) + 1

    def sample(self) -> None:
        """Roll the day counters and recompute the rates since the previous sample."""
        now = self._clock_ms()
        day = _day(now)
        if day != self._day:
            self._day = day
            self.put_yesterday_morning, self.put_today_morning = self.put_today_morning, self.put_total
            self.get_yesterday_morning, self.get_today_morning = self.get_today_morning, self.get_total
        elapsed = (now - self._last_sample_ms) / 1000
        if elapsed <= 0:
            return
        self.put_tps = (self.put_total - self._last_put) / elapsed
        self.get_tps = (self.get_total - self._last_get) / elapsed
        self.group_tps = {
            key: (count - self._last_group_gets.get(key, 0)) / elapsed for key, count in self._group_gets.items()
        }
        self._remember_gets(now)
        self._last_sample_ms = now
        self._last_put = self.put_total
        self._last_get = self.get_total
        self._last_group_gets = dict(self._group_gets)

    def _remember_gets(self, now: int) -> None:
        for window, history in self._get_history.items():
            if now - history[-1][0] >= window // 60:
                history.append((now, dict(self._group_gets), dict(self._group_pulls)))
            # Drop a baseline once the next snapshot alone covers the window.
            while len(history) > 1 and now - history[1][0] >= window:
                history.popleft()

    def group_get_windows(self, group: str, topic: str) -> dict[str, dict[str, float]] | None:
        """GROUP_GET_NUMS as BrokerStatsData: per window the messages the group pulled from
        the topic (`sum`), their rate (`tps`) and messages per pull (`avgpt`); None when the
        group never pulled the topic (RocketMQ has no stats item then)."""
        key = (group, topic)
        if key not in self._group_gets:
            return None
        now = self._clock_ms()
        out: dict[str, dict[str, float]] = {}
        for name, window in zip(("statsMinute", "statsHour", "statsDay"), GET_WINDOWS_MS):
            base_ms, gets, pulls = self._get_history[window][0]
            count = self._group_gets[key] - gets.get(key, 0)
            calls = self._group_pulls[key] - pulls.get(key, 0)
            elapsed = max(now - base_ms, 1)
            out[name] = {"avgpt": count / calls if calls else 0.0, "sum": count, "tps": count * 1000.0 / elapsed}
        return out

    def consume_tps(self, group: str, topics: list[str]) -> float:
        return sum(self.group_tps.get((group, t), 0.0) for t in topics)

    def runtime_figures(self) -> dict[str, str]:
        """The counter part of GET_BROKER_RUNTIME_INFO, under RocketMQ's names."""
        now = self._clock_ms()
        return {
            "bootTimestamp": str(self.boot_timestamp),
            "runtime": _runtime_text(now - self.boot_timestamp),
            "msgPutTotalTodayNow": str(self.put_total),
            "msgPutTotalTodayMorning": str(self.put_today_morning),
            "msgPutTotalYesterdayMorning": str(self.put_yesterday_morning),
            "msgGetTotalTodayNow": str(self.get_total),
            "msgGetTotalTodayMorning": str(self.get_today_morning),
            "msgGetTotalYesterdayMorning": str(self.get_yesterday_morning),
            "putTps": f"{self.put_tps:.2f}",
            "getTransferedTps": f"{self.get_tps:.2f}",
        }


def _runtime_text(ms: int) -> str:
    """RocketMQ's "[ d days, h hours, m minutes, s seconds ]" uptime text."""
    seconds = max(ms, 0) // 1000
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {secs} seconds ]"
