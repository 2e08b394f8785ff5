"""A Java consumer's connection, faked: it heartbeats once, then answers from a thread what
RocketMQ's ClientRemotingProcessor answers the broker.

GET_CONSUMER_RUNNING_INFO gets `running_info`; CONSUME_MESSAGE_DIRECTLY gets CR_SUCCESS with
the message's body as the remark. Every request the broker pushes is kept in `seen`.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from tests.conformance.wire import Conn, Reply, decode_records, java_response

HEART_BEAT = 34
GET_CONSUMER_RUNNING_INFO = 307
CONSUME_MESSAGE_DIRECTLY = 309


class FakeJavaConsumer:
    def __init__(self, addr: str, heartbeat: dict[str, Any], running_info: bytes, spent_ms: int) -> None:
        self.conn = Conn(addr)
        self.running_info = running_info
        self.spent_ms = spent_ms
        assert self.conn.java(HEART_BEAT, None, json.dumps(heartbeat).encode()).code == 0
        self.seen: list[Reply] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            while True:
                request = self.conn.read()
                if request.flag & 1:  # a response, not a request
                    continue
                self.seen.append(request)
                if request.code == GET_CONSUMER_RUNNING_INFO:
                    body = self.running_info
                elif request.code == CONSUME_MESSAGE_DIRECTLY:
                    (msg,) = decode_records(request.body)
                    body = json.dumps({"order": False, "autoCommit": True, "consumeResult": "CR_SUCCESS",
                                       "remark": msg.body.decode(), "spentTimeMills": self.spent_ms}).encode()
                else:
                    continue
                self.conn.sock.sendall(java_response(request.opaque, body=body))
        except (OSError, ConnectionError):
            return

    def close(self) -> None:
        self.conn.close()
        self.thread.join(5)
