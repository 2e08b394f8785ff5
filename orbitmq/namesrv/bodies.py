"""JSON bodies the NameServer reads and writes (protocol reference §4.2-§4.6, §4.13).

Output follows what a 4.9.7 name server sends: bean keys in alphabetical
order, null fields left out, and the two map forms of fastjson (written by
`orbitmq.common.jsonbody`):

* legacy: numeric map keys bare (`{0:"ip:port"}`), non-ASCII raw UTF-8 -
  what fastjson writes by default, and the only form old clients expect;
* standard: every key quoted and maps sorted (numeric keys in numeric order),
  non-ASCII as upper-case `\\uXXXX` escapes - what a 4.9.4+ name server sends
  to clients that announce version >= 401 or `acceptStandardJsonOnly`.

Input is REGISTER_BROKER's RegisterBrokerBody, plain JSON or the compressed
form, and QUERY_DATA_VERSION's DataVersion. Malformed input raises
`BodyError` (a ValueError), which the transport answers with SYSTEM_ERROR
and the error text as remark.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from orbitmq.common.jsonbody import dumps_legacy, dumps_route_standard
from orbitmq.common.jsonbody import loads as lenient_loads
from orbitmq.errors import OrbitMQError
from orbitmq.namesrv.routes import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicRouteData,
)

#: A compressed registration of 10 000 topics inflates to about 400 KiB; this
#: bound stops a small hostile body from inflating into gigabytes.
MAX_INFLATED_REGISTER_BODY = 64 << 20

_INT = struct.Struct(">i")


class BodyError(OrbitMQError, ValueError):
    """A request body that is not the JSON or binary shape its code requires."""


# --- writing ----------------------------------------------------------------------


def _dumps(value: Any, standard: bool = False) -> bytes:
    # Both writers sort keys (bean fields are alphabetical in fastjson) and drop None values.
    return dumps_route_standard(value) if standard else dumps_legacy(value)


def _queue_data(qd: QueueData) -> dict[str, Any]:
    return {
        "brokerName": qd.broker_name,
        "perm": qd.perm,
        "readQueueNums": qd.read_queue_nums,
        "topicSysFlag": qd.topic_sys_flag,
        "writeQueueNums": qd.write_queue_nums,
    }


def _broker_data(bd: BrokerData) -> dict[str, Any]:
    return {"brokerAddrs": dict(bd.broker_addrs), "brokerName": bd.broker_name, "cluster": bd.cluster}


def encode_route(route: TopicRouteData, *, standard: bool) -> bytes:
    """TopicRouteData in the legacy fastjson form or the standard form (§4.2)."""
    return _dumps(
        {
            "brokerDatas": [_broker_data(b) for b in route.broker_datas],
            # Filter servers are gone from RocketMQ; clients expect an empty map.
            "filterServerTable": {},
            "orderTopicConf": route.order_topic_conf,
            "queueDatas": [_queue_data(q) for q in route.queue_datas],
        },
        standard,
    )


def encode_cluster_info(info: ClusterInfo) -> bytes:
    """ClusterInfo, always in the legacy form as RocketMQ sends it (§4.3)."""
    return _dumps(
        {
            "brokerAddrTable": {name: _broker_data(b) for name, b in info.broker_addr_table.items()},
            "clusterAddrTable": {c: list(names) for c, names in info.cluster_addr_table.items()},
        }
    )


def encode_topic_list(topics: Iterable[str], broker_addr: str | None = None) -> bytes:
    """TopicList (§4.4); `brokerAddr` only when given."""
    return _dumps({"brokerAddr": broker_addr, "topicList": list(topics)})


def encode_kv_table(table: Mapping[str, str]) -> bytes:
    """KVTable (§4.13): `{"table":{k:v}}`."""
    return _dumps({"table": dict(table)})


def encode_data_version(version: DataVersion) -> bytes:
    return _dumps({"counter": version.counter, "timestamp": version.timestamp})


# --- reading ----------------------------------------------------------------------


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BodyError(f"{what} is not a JSON object")
    return value


def _int(obj: Mapping[str, Any], name: str, default: int) -> int:
    value = obj.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise BodyError(f"{name} is not an integer: {value!r}")
    try:
        return int(value)
    except ValueError:
        raise BodyError(f"{name} is not an integer: {value!r}") from None


def parse_json(data: bytes, what: str) -> Any:
    # Java peers send standard JSON, other SDKs sometimes fastjson's lenient
    # dialect; the lenient reader takes both.
    try:
        return lenient_loads(data)
    except ValueError as exc:
        raise BodyError(f"{what} is not valid JSON: {exc}") from None


def decode_data_version(data: bytes | Mapping[str, Any]) -> DataVersion:
    """A DataVersion from its JSON bytes (or an already parsed object)."""
    obj = _object(data if isinstance(data, Mapping) else parse_json(data, "dataVersion"), "dataVersion")
    return DataVersion(timestamp=_int(obj, "timestamp", 0), counter=_int(obj, "counter", 0))


def _topic_config(name: str, obj: Mapping[str, Any]) -> TopicConfig:
    topic_name = obj.get("topicName") or name
    if not isinstance(topic_name, str):
        raise BodyError(f"topicName is not a string: {topic_name!r}")
    filter_type = obj.get("topicFilterType") or "SINGLE_TAG"
    order = obj.get("order", False)
    return TopicConfig(
        topic_name=topic_name,
        read_queue_nums=_int(obj, "readQueueNums", 16),
        write_queue_nums=_int(obj, "writeQueueNums", 16),
        perm=_int(obj, "perm", 6),
        topic_filter_type=str(filter_type),
        topic_sys_flag=_int(obj, "topicSysFlag", 0),
        order=order is True or order == "true",
    )


def decode_topic_config_wrapper(obj: object) -> tuple[DataVersion, dict[str, TopicConfig]]:
    """TopicConfigSerializeWrapper (§4.5) from a parsed JSON object."""
    wrapper = _object(obj, "topicConfigSerializeWrapper")
    version = decode_data_version(_object(wrapper.get("dataVersion") or {}, "dataVersion"))
    table = _object(wrapper.get("topicConfigTable") or {}, "topicConfigTable")
    return version, {str(k): _topic_config(str(k), _object(v, f"topic config {k}")) for k, v in table.items()}


def decode_register_body(
    data: bytes, *, compressed: bool
) -> tuple[DataVersion, dict[str, TopicConfig], list[str]]:
    """RegisterBrokerBody (§4.6): (data version, topic configs by name, filter servers)."""
    if compressed:
        return _decode_compressed(data)
    doc = _object(parse_json(data, "register body"), "register body")
    version, topics = decode_topic_config_wrapper(doc.get("topicConfigSerializeWrapper") or {})
    filters = doc.get("filterServerList") or []
    if not isinstance(filters, list):
        raise BodyError("filterServerList is not a list")
    return version, topics, [str(f) for f in filters]


def _decode_compressed(data: bytes) -> tuple[DataVersion, dict[str, TopicConfig], list[str]]:
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, MAX_INFLATED_REGISTER_BODY)
    except zlib.error as exc:
        raise BodyError(f"compressed register body does not inflate: {exc}") from None
    if inflater.unconsumed_tail:
        raise BodyError(f"compressed register body inflates beyond {MAX_INFLATED_REGISTER_BODY} bytes")
    reader = _Reader(raw)
    version = decode_data_version(reader.chunk())
    count = reader.int()
    if count < 0:
        raise BodyError(f"negative topic count {count}")
    topics: dict[str, TopicConfig] = {}
    for _ in range(count):
        fields = reader.chunk().decode("utf-8", "replace").split(" ")
        if len(fields) != 5:
            raise BodyError(f"compressed topic entry has {len(fields)} fields, want 5")
        name, read, write, perm, filter_type = fields
        try:
            topics[name] = TopicConfig(name, int(read), int(write), int(perm), filter_type)
        except ValueError:
            raise BodyError(f"compressed topic entry for {name!r} has a non-numeric field") from None
    filters = parse_json(reader.chunk(), "filterServerList") if reader.remaining() else []
    if not isinstance(filters, list):
        raise BodyError("filterServerList is not a list")
    return version, topics, [str(f) for f in filters]


class _Reader:
    """Length-prefixed chunks of the inflated compressed registration."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def int(self) -> int:
        if self.remaining() < 4:
            raise BodyError("compressed register body is truncated")
        (value,) = _INT.unpack_from(self._data, self._pos)
        self._pos += 4
        return int(value)

    def chunk(self) -> bytes:
        length = self.int()
        if length < 0 or length > self.remaining():
            raise BodyError(f"compressed register body has a bad chunk length {length}")
        out = self._data[self._pos : self._pos + length]
        self._pos += length
        return out


def encode_compressed_register_body(
    version: DataVersion, topics: Iterable[TopicConfig], filter_servers: Iterable[str] = ()
) -> bytes:
    """The compressed RegisterBrokerBody a broker sends with `compressed=true` (for brokers and tests)."""
    topic_list = list(topics)
    parts = [_chunk(encode_data_version(version)), _INT.pack(len(topic_list))]
    for t in topic_list:
        line = f"{t.topic_name} {t.read_queue_nums} {t.write_queue_nums} {t.perm} {t.topic_filter_type}"
        parts.append(_chunk(line.encode()))
    parts.append(_chunk(orjson.dumps(list(filter_servers))))
    return zlib.compress(b"".join(parts), 9)


def _chunk(data: bytes) -> bytes:
    return _INT.pack(len(data)) + data
