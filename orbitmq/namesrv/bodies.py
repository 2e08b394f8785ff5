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

from orbitmq.common.dataversion import DataVersion
from orbitmq.common.jsonbody import dumps_legacy, dumps_route_standard
from orbitmq.common.jsonbody import loads as lenient_loads
from orbitmq.common.route import ClusterInfo, TopicRouteData
from orbitmq.common.topic_config import TopicConfig
from orbitmq.errors import OrbitMQError

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


def encode_route(route: TopicRouteData, *, standard: bool) -> bytes:
    """TopicRouteData in the legacy fastjson form or the standard form (§4.2)."""
    return route.encode(standard=standard)


def encode_cluster_info(info: ClusterInfo) -> bytes:
    """ClusterInfo, always in the legacy form as RocketMQ sends it (§4.3)."""
    return info.encode()


def encode_topic_list(topics: Iterable[str], broker_addr: str | None = None) -> bytes:
    """TopicList (§4.4); `brokerAddr` only when given."""
    return _dumps({"brokerAddr": broker_addr, "topicList": list(topics)})


def encode_kv_table(table: Mapping[str, str]) -> bytes:
    """KVTable (§4.13): `{"table":{k:v}}`."""
    return _dumps({"table": dict(table)})


def encode_data_version(version: DataVersion) -> bytes:
    return _dumps(version.to_json())


# --- reading ----------------------------------------------------------------------


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise BodyError(f"{what} is not a JSON object")
    return value


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
    try:
        return DataVersion.from_json(obj)
    except ValueError as exc:
        raise BodyError(str(exc)) from None


def decode_topic_config_wrapper(obj: object) -> tuple[DataVersion, dict[str, TopicConfig]]:
    """TopicConfigSerializeWrapper (§4.5) from a parsed JSON object."""
    wrapper = _object(obj, "topicConfigSerializeWrapper")
    version = decode_data_version(_object(wrapper.get("dataVersion") or {}, "dataVersion"))
    table = _object(wrapper.get("topicConfigTable") or {}, "topicConfigTable")
    try:
        return version, {str(k): TopicConfig.from_json(v, str(k)) for k, v in table.items()}
    except ValueError as exc:
        raise BodyError(str(exc)) from None


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
