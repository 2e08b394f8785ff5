"""The order closer: consumes `order_timeout` messages and closes the orders still unpaid.

    python order_closer.py --db orders.db --namesrv 127.0.0.1:9876

Prints one line per timeout message (`closed ORDER-1` or `ORDER-2 was paid;
left alone`) and runs until Ctrl-C or SIGTERM. Delivery is at least once, so
a repeated message finds the order already closed and changes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Callable

from orders import OrderBook  # this folder's module (scripts run from here put it on sys.path)

from orbitmq.client import ConsumeResult, MessageExt, PushConsumer

TOPIC = "order_timeout"
GROUP = "order_closer"


def make_listener(book: OrderBook) -> Callable[[list[MessageExt]], ConsumeResult]:
    def on_timeouts(msgs: list[MessageExt]) -> ConsumeResult:
        for msg in msgs:
            try:
                order_id = json.loads(msg.body)["order_id"]
            except (ValueError, KeyError, TypeError):
                print(f"skipping malformed timeout message {msg.msg_id}", flush=True)
                continue
            if book.close_if_unpaid(order_id):
                print(f"closed {order_id}", flush=True)
            else:
                order = book.get(order_id)
                state = "unknown" if order is None else order.status.lower()
                print(f"{order_id} was {state}; left alone", flush=True)
        return ConsumeResult.CONSUME_SUCCESS
    return on_timeouts


async def run(namesrv: str, db: str) -> None:
    consumer = PushConsumer(GROUP, namesrv_addr=namesrv, consume_from_where="CONSUME_FROM_FIRST_OFFSET")
    consumer.subscribe(TOPIC, "*")
    consumer.register_listener(make_listener(OrderBook(db)))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await consumer.start()
    print(f"closing unpaid orders from {TOPIC}", flush=True)
    try:
        await stop.wait()
    finally:
        await consumer.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default="orders.db", help="SQLite file with the orders")
    parser.add_argument("--namesrv", default="127.0.0.1:9876", help="NameServer host:port")
    args = parser.parse_args(argv)
    asyncio.run(run(args.namesrv, args.db))
    return 0


if __name__ == "__main__":
    sys.exit(main())
