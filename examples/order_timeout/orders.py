"""The order table of the example, in a small SQLite file shared by the service and the closer.

Every state change is one conditional UPDATE, so a payment and a timeout that
race can never both win: whichever commits first moves the order out of
UNPAID and the other finds nothing to change.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass

UNPAID, PAID, CLOSED = "UNPAID", "PAID", "CLOSED"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS orders (
    id TEXT PRIMARY KEY,
    amount_cents INTEGER NOT NULL,
    status TEXT NOT NULL,
    created_ms INTEGER NOT NULL,
    updated_ms INTEGER NOT NULL
)
"""


@dataclass(frozen=True)
class Order:
    id: str
    amount_cents: int
    status: str
    created_ms: int
    updated_ms: int


class OrderBook:
    def __init__(self, path: str) -> None:
        self.path = path
        with closing(self._connect()) as db, db:
            db.execute(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        # One short connection per operation: the closer's listener may run on any worker thread.
        return sqlite3.connect(self.path, timeout=10)

    def create(self, order_id: str, amount_cents: int) -> None:
        """Insert a new UNPAID order; ValueError when the id is taken."""
        now = int(time.time() * 1000)
        try:
            with closing(self._connect()) as db, db:
                db.execute("INSERT INTO orders VALUES (?, ?, ?, ?, ?)", (order_id, amount_cents, UNPAID, now, now))
        except sqlite3.IntegrityError:
            raise ValueError(f"order {order_id} exists already") from None

    def forget(self, order_id: str) -> None:
        with closing(self._connect()) as db, db:
            db.execute("DELETE FROM orders WHERE id = ? AND status = ?", (order_id, UNPAID))

    def _move(self, order_id: str, to: str) -> bool:
        with closing(self._connect()) as db, db:
            cur = db.execute("UPDATE orders SET status = ?, updated_ms = ? WHERE id = ? AND status = ?",
                             (to, int(time.time() * 1000), order_id, UNPAID))
            return cur.rowcount == 1

    def pay(self, order_id: str) -> bool:
        """UNPAID -> PAID; False when the order is unknown, closed or paid already."""
        return self._move(order_id, PAID)

    def close_if_unpaid(self, order_id: str) -> bool:
        """UNPAID -> CLOSED; False when it was paid (or closed, or is unknown)."""
        return self._move(order_id, CLOSED)

    def get(self, order_id: str) -> Order | None:
        with closing(self._connect()) as db:
            row = db.execute("SELECT * FROM orders WHERE id = ?", (order_id,)).fetchone()
        return Order(*row) if row else None

    def all(self) -> list[Order]:
        with closing(self._connect()) as db:
            return [Order(*row) for row in db.execute("SELECT * FROM orders ORDER BY created_ms")]
