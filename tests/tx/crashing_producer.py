"""A transaction producer that stores a half message and then hangs in its local transaction.

Run as `python -m tests.tx.crashing_producer NAMESRV TOPIC GROUP`; it prints
`HALF <uniq key>` once the half message is stored and its local transaction
started, then waits forever, so the test can SIGKILL it before it ends the
transaction.
"""

from __future__ import annotations

import asyncio
import sys

from orbitmq.client import Message, TransactionProducer
from orbitmq.common.message import MessageExt


class Hangs:
    async def execute_local_transaction(self, msg: Message, arg: object) -> None:
        print(f"HALF {msg.unique_key}", flush=True)
        await asyncio.Event().wait()

    def check_local_transaction(self, msg: MessageExt) -> None:
        return None


async def main(namesrv: str, topic: str, group: str) -> None:
    producer = TransactionProducer(group, Hangs(), namesrv_addr=namesrv, instance_name="crashing")
    await producer.start()
    await producer.send_message_in_transaction(Message(topic, b"from the crashed producer"))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
