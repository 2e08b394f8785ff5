"""The order service: create orders (each with a delayed timeout message), pay them, list them.

    python order_service.py --db orders.db create ORDER-1 --amount 9.90
    python order_service.py --db orders.db pay ORDER-1
    python order_service.py --db orders.db list

Creating an order stores it as UNPAID and sends a message to the
`order_timeout` topic with delay level 16 (30 minutes with RocketMQ's default
table; `--delay-level` picks another). When it arrives, `order_closer.py`
closes the order unless it was paid meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from decimal import Decimal, InvalidOperation

from orders import OrderBook  # this folder's module (scripts run from here put it on sys.path)

from orbitmq.client import Message, Producer
from orbitmq.errors import OrbitMQError

TOPIC = "order_timeout"
#: Level 16 of RocketMQ's default delay table is 30 minutes.
DEFAULT_DELAY_LEVEL = 16


async def create(book: OrderBook, namesrv: str, order_id: str, amount: str, delay_level: int) -> int:
    try:
        cents = int(Decimal(amount) * 100)
    except InvalidOperation:
        print(f"error: amount {amount!r} is not a number", file=sys.stderr)
        return 2
    try:
        book.create(order_id, cents)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    body = json.dumps({"order_id": order_id, "amount_cents": cents}).encode()
    try:
        async with Producer("order_service", namesrv_addr=namesrv) as producer:
            result = await producer.send(Message(TOPIC, body, keys=[order_id], delay_time_level=delay_level))
    except OrbitMQError as exc:
        book.forget(order_id)  # without its timeout message an order could stay unpaid forever
        print(f"error: order {order_id} not created, the timeout message was not sent: {exc}", file=sys.stderr)
        return 1
    print(f"created {order_id} ({cents / 100:.2f}); timeout message {result.msg_id} at delay level {delay_level}")
    return 0


def pay(book: OrderBook, order_id: str) -> int:
    if book.pay(order_id):
        print(f"paid {order_id}")
        return 0
    order = book.get(order_id)
    state = "unknown" if order is None else order.status.lower()
    print(f"error: order {order_id} is {state}; payment refused", file=sys.stderr)
    return 1


def show(book: OrderBook) -> int:
    for order in book.all():
        print(f"{order.id}\t{order.amount_cents / 100:.2f}\t{order.status}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", default="orders.db", help="SQLite file with the orders")
    parser.add_argument("--namesrv", default="127.0.0.1:9876", help="NameServer host:port")
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("create", help="create an order and schedule its timeout")
    c.add_argument("order_id")
    c.add_argument("--amount", default="1.00")
    c.add_argument("--delay-level", type=int, default=DEFAULT_DELAY_LEVEL)
    p = sub.add_parser("pay", help="pay an order that is still open")
    p.add_argument("order_id")
    sub.add_parser("list", help="print every order")
    args = parser.parse_args(argv)
    book = OrderBook(args.db)
    if args.command == "create":
        return asyncio.run(create(book, args.namesrv, args.order_id, args.amount, args.delay_level))
    if args.command == "pay":
        return pay(book, args.order_id)
    return show(book)


if __name__ == "__main__":
    sys.exit(main())
