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


async def feed(namesrv: str, topic: str, rate: int, seconds: float) -> None:
    customers = [f"c{i:03d}" for i in range(50)]
    sent = 0
    started = time.monotonic()
    async with Producer("ORDERS_FEEDER", namesrv_addr=namesrv) as producer:
        while seconds <= 0 or time.monotonic() - started < seconds:
            batch = []
            for _ in range(max(1, rate // 10)):
                order = {
                    "orderId": f"o{sent}",
                    "customer": random.choice(customers),
                    "amount": round(random.uniform(1, 200), 2),
                    "ts": int(time.time() * 1000),
                }
                msg = Message(topic, json.dumps(order).encode())
                msg.keys = order["orderId"]
                msg.tags = "created"
                batch.append(msg)
                sent += 1
            await producer.send(batch)
            await asyncio.sleep(0.1)
    print(f"sent {sent} orders")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--namesrv", default="127.0.0.1:9876")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--rate", type=int, default=200, help="orders per second")
    parser.add_argument("--seconds", type=float, default=0, help="stop after this long (0: run until Ctrl-C)")
    args = parser.parse_args()
    try:
        asyncio.run(feed(args.namesrv, args.topic, args.rate, args.seconds))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
