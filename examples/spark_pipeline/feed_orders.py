"""Send a steady stream of JSON orders to the `orders` topic, for the Spark pipeline example.

    python examples/spark_pipeline/feed_orders.py --namesrv 127.0.0.1:9876 --rate 200
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time

from orbitmq.client.producer import Producer
from orbitmq.common.message import Message

CUSTOMERS = [f"c{i:03d}" for i in range(50)]


def order_message(topic: str, n: int, ts_ms: int) -> Message:
    order = {"orderId": f"o{n}", "customer": random.choice(CUSTOMERS),
             "amount": round(random.uniform(1, 200), 2), "ts": ts_ms}
    msg = Message(topic, json.dumps(order).encode())
    msg.keys = order["orderId"]
    msg.tags = "created"
    return msg


async def feed(namesrv: str, topic: str, rate: int, seconds: float, backfill_minutes: int) -> None:
    sent = 0
    started = time.monotonic()
    async with Producer("ORDERS_FEEDER", namesrv_addr=namesrv) as producer:
        if backfill_minutes:
            # Orders spread over the last minutes, so closed minutes show up at once.
            now = int(time.time() * 1000)
            total = rate * 60 * backfill_minutes // 60  # one second's worth per minute
            for first in range(0, total, 100):
                batch = [order_message(topic, sent + i, now - backfill_minutes * 60_000 * (total - first - i) // total)
                         for i in range(min(100, total - first))]
                await producer.send(batch)
                sent += len(batch)
        while seconds <= 0 or time.monotonic() - started < seconds:
            batch = [order_message(topic, sent + i, int(time.time() * 1000)) for i in range(max(1, rate // 10))]
            await producer.send(batch)
            sent += len(batch)
            await asyncio.sleep(0.1)
    print(f"sent {sent} orders")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--namesrv", default="127.0.0.1:9876")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--rate", type=int, default=200, help="orders per second")
    parser.add_argument("--seconds", type=float, default=0, help="stop after this long (0: run until Ctrl-C)")
    parser.add_argument("--backfill-minutes", type=int, default=0,
                        help="first send orders time-stamped over this many past minutes")
    args = parser.parse_args()
    try:
        asyncio.run(feed(args.namesrv, args.topic, args.rate, args.seconds, args.backfill_minutes))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
