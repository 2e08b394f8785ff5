"""The official RocketMQ 5 Python client (rocketmq-python-client) sending through the gRPC port,
with TLS on or off. Run by tests/proxy/test_tls.py in a child process (the client's generated
apache.rocketmq.v2 modules and OrbitMQ's cannot share one process):

    python tls_py_client.py ENDPOINT TOPIC tls|plain BODY

The client verifies the server against the system's CAs (it has no other setting); the test
points grpc at its own CA with GRPC_DEFAULT_SSL_ROOTS_FILE_PATH. Prints one line
`RESULT {"ok": true, "id": ...}` or `RESULT {"ok": false, "error": ...}` and exits 0.
"""

from __future__ import annotations

import contextlib
import json
import sys

from rocketmq import ClientConfiguration, Credentials, Message, Producer


def main(endpoint: str, topic: str, mode: str, body: str) -> dict[str, object]:
    producer = Producer(ClientConfiguration(endpoint, Credentials(), request_timeout=3), (topic,),
                        tls_enable=mode == "tls")
    try:
        producer.startup()
        message = Message()
        message.topic = topic
        message.body = body.encode()
        return {"ok": True, "id": producer.send(message).message_id}
    except Exception as exc:  # noqa: BLE001 -- whatever the client raises is the result
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    finally:
        with contextlib.suppress(Exception):  # a client that never started may fail to stop
            producer.shutdown()


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:5])), flush=True)
