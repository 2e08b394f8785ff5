"""Hand-built RocketMQ remoting frames over a plain socket, independent of orbitmq.remoting.

Frames are written the way a Java 4.9.7 peer writes them (protocol reference
§1.2/§1.4): length, header-length word (JSON = type 0), compact JSON header
with sorted keys, body.
"""

from __future__ import annotations

import json
import socket
import struct
from dataclasses import dataclass
from typing import Any, Self

GET_ROUTEINFO_BY_TOPIC = 105
REGISTER_BROKER = 103
UNREGISTER_BROKER = 104
GET_BROKER_CLUSTER_INFO = 106
PUT_KV_CONFIG = 100
GET_KV_CONFIG = 101
GET_KVLIST_BY_NAMESPACE = 219
QUERY_DATA_VERSION = 322
GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
GET_UNIT_TOPIC_LIST = 311
WIPE_WRITE_PERM_OF_BROKER = 205
ADD_WRITE_PERM_OF_BROKER = 327
DELETE_TOPIC_IN_NAMESRV = 216
UPDATE_NAMESRV_CONFIG = 318
GET_NAMESRV_CONFIG = 319


def frame(
    code: int, ext: dict[str, str] | None = None, body: bytes = b"", *, version: int = 407, opaque: int = 1
) -> bytes:
    header: dict[str, Any] = {
        "code": code,
        "flag": 0,
        "language": "JAVA",
        "opaque": opaque,
        "serializeTypeCurrentRPC": "JSON",
        "version": version,
    }
    if ext:
        header["extFields"] = ext
    raw = json.dumps(header, separators=(",", ":"), sort_keys=True).encode()
    return struct.pack(">ii", 4 + len(raw) + len(body), len(raw)) + raw + body


@dataclass
class Response:
    header: dict[str, Any]
    body: bytes

    @property
    def code(self) -> int:
        return int(self.header["code"])

    @property
    def remark(self) -> str | None:
        return self.header.get("remark")

    @property
    def ext(self) -> dict[str, str]:
        return dict(self.header.get("extFields") or {})


class RawConnection:
    """One blocking TCP connection that sends requests and reads their responses in order."""

    def __init__(self, addr: str, timeout: float = 5.0) -> None:
        host, port = addr.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._opaque = 0

    def call(
        self, code: int, ext: dict[str, str] | None = None, body: bytes = b"", *, version: int = 407
    ) -> Response:
        self._opaque += 1
        self.sock.sendall(frame(code, ext, body, version=version, opaque=self._opaque))
        response = self.read()
        assert response.header["opaque"] == self._opaque
        assert response.header["flag"] & 1 == 1, "not a response"
        return response

    def read_frame(self) -> bytes:
        """One whole frame after its length field: header-length word, header, body."""
        (length,) = struct.unpack(">i", self._exactly(4))
        return self._exactly(length)

    def read(self) -> Response:
        rest = self.read_frame()
        (word,) = struct.unpack(">i", rest[:4])
        assert word >> 24 == 0, "the answer to a JSON request must be JSON"
        header_len = word & 0xFFFFFF
        return Response(json.loads(rest[4 : 4 + header_len]), rest[4 + header_len :])

    def _exactly(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed by the server")
            out += chunk
        return out

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def register_body(
    topics: dict[str, tuple[int, int, int]], counter: int = 1, timestamp: int = 1700000000000, state_version: int = 0
) -> bytes:
    """A RegisterBrokerBody as a Java broker sends it: topic -> (read, write, perm).

    A state version (a controller-mode master's epoch) is sent only when not 0, as 4.x brokers send none.
    """
    table = {
        name: {
            "order": False,
            "perm": perm,
            "readQueueNums": read,
            "topicFilterType": "SINGLE_TAG",
            "topicName": name,
            "topicSysFlag": 0,
            "writeQueueNums": write,
        }
        for name, (read, write, perm) in topics.items()
    }
    doc = {
        "filterServerList": [],
        "topicConfigSerializeWrapper": {
            "dataVersion": {"counter": counter, "timestamp": timestamp},
            "topicConfigTable": table,
        },
    }
    if state_version:
        doc["topicConfigSerializeWrapper"]["dataVersion"]["stateVersion"] = state_version  # type: ignore[index]
    return json.dumps(doc, separators=(",", ":")).encode()


def register_header(
    name: str = "broker-a",
    addr: str = "127.0.0.1:10911",
    cluster: str = "DefaultCluster",
    broker_id: int = 0,
    **extra: str,
) -> dict[str, str]:
    host = addr.rsplit(":", 1)[0]
    return {
        "brokerName": name,
        "brokerAddr": addr,
        "clusterName": cluster,
        "haServerAddr": f"{host}:10912",
        "brokerId": str(broker_id),
        "compressed": "false",
        "bodyCrc32": "0",
        **extra,
    }
