"""The frame codec, byte for byte against the protocol reference, and under any split of the stream."""

from __future__ import annotations

import struct
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.errors import FrameError
from orbitmq.remoting.codec import FrameDecoder, encode
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import Buffer, LanguageCode, RemotingCommand, SerializeType


def frame_bytes(cmd: RemotingCommand) -> bytes:
    return b"".join(bytes(part) for part in encode(cmd))


def decode_one(data: bytes) -> RemotingCommand:
    (cmd,) = FrameDecoder().feed(data)
    return cmd


def json_frame(header: bytes, body: bytes = b"") -> bytes:
    return struct.pack(">ii", 4 + len(header) + len(body), len(header)) + header + body


# Exact frames from the protocol reference (§1.4, §1.5), as a Java 4.9.7 peer writes them.
UNREGISTER_ONEWAY = bytes.fromhex("0000006400000060") + (
    b'{"code":35,"flag":2,"language":"JAVA","opaque":9,"serializeTypeCurrentRPC":"JSON","version":407}'
)
ROUTE_QUERY_BINARY = bytes.fromhex(
    "00000025" "01000021" "0069" "00" "0197" "00000001" "00000000" "00000000" "0000000c"
    "0005" "746f706963" "00000001" "54"
)


def test_a_oneway_unregister_client_request_encodes_to_the_java_bytes() -> None:
    cmd = RemotingCommand(RequestCode.UNREGISTER_CLIENT, opaque=9, flag=2, language=LanguageCode.JAVA)
    assert frame_bytes(cmd) == UNREGISTER_ONEWAY


def test_the_java_oneway_unregister_client_frame_decodes_to_its_fields() -> None:
    cmd = decode_one(UNREGISTER_ONEWAY)
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.language, cmd.version) == (35, 9, 2, LanguageCode.JAVA, 407)
    assert cmd.is_oneway and not cmd.is_response
    assert cmd.ext_fields is None and cmd.remark is None and cmd.body is None
    assert cmd.serialize_type == SerializeType.JSON


def test_a_route_query_header_has_the_java_key_order_and_no_whitespace() -> None:
    cmd = RemotingCommand(105, {"topic": "T"}, opaque=1, language=LanguageCode.JAVA)
    assert frame_bytes(cmd)[8:] == (
        b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":1,'
        b'"serializeTypeCurrentRPC":"JSON","version":407}'
    )


def test_an_error_response_carries_its_remark_between_opaque_and_serialize_type() -> None:
    request = RemotingCommand(105, {"topic": "T"}, opaque=7, language=LanguageCode.JAVA)
    response = request.response(ResponseCode.TOPIC_NOT_EXIST, "topic not exist")
    response.language = LanguageCode.JAVA
    assert frame_bytes(response)[8:] == (
        b'{"code":17,"flag":1,"language":"JAVA","opaque":7,"remark":"topic not exist",'
        b'"serializeTypeCurrentRPC":"JSON","version":407}'
    )


def test_a_binary_route_query_encodes_to_the_reference_bytes() -> None:
    cmd = RemotingCommand(
        105, {"topic": "T"}, opaque=1, language=LanguageCode.JAVA, serialize_type=SerializeType.ROCKETMQ
    )
    assert frame_bytes(cmd) == ROUTE_QUERY_BINARY


def test_the_reference_binary_route_query_decodes_and_remembers_its_serialization() -> None:
    cmd = decode_one(ROUTE_QUERY_BINARY)
    assert cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC
    assert (cmd.opaque, cmd.flag, cmd.version, cmd.language) == (1, 0, 407, LanguageCode.JAVA)
    assert cmd.ext_fields == {"topic": "T"} and cmd.remark is None and cmd.body is None
    assert cmd.serialize_type == SerializeType.ROCKETMQ
    assert cmd.response().serialize_type == SerializeType.ROCKETMQ


def test_a_go_client_header_is_accepted_with_its_empty_remark_and_missing_fields() -> None:
    header = b'{"code":105,"language":"GO","version":317,"opaque":3,"flag":0,"remark":"","extFields":{"topic":"T"}}'
    cmd = decode_one(json_frame(header))
    assert cmd.language == LanguageCode.GO and cmd.version == 317 and cmd.opaque == 3
    assert cmd.remark is None and cmd.ext_fields == {"topic": "T"}


def test_numeric_and_unknown_languages_are_accepted() -> None:
    assert decode_one(json_frame(b'{"code":1,"language":9}')).language == LanguageCode.GO
    assert decode_one(json_frame(b'{"code":1,"language":"KOTLIN"}')).language == LanguageCode.OTHER
    assert decode_one(json_frame(b'{"code":1}')).language == LanguageCode.JAVA


def test_ext_field_numbers_and_booleans_become_java_strings() -> None:
    header = b'{"code":11,"extFields":{"queueId":3,"queueOffset":12345678901,"unitMode":true,"batch":false,"x":null}}'
    cmd = decode_one(json_frame(header))
    assert cmd.ext_fields == {"queueId": "3", "queueOffset": "12345678901", "unitMode": "true", "batch": "false"}


def test_control_characters_in_properties_survive_a_round_trip() -> None:
    props = "KEYS\x01k1 k2\x02UNIQ_KEY\x01C0A8\x02TAGS\x01TagA"
    cmd = RemotingCommand(310, {"i": props, "b": "主题"}, body=b"payload")
    raw = frame_bytes(cmd)
    assert b"\\u0001" in raw and "主题".encode() in raw
    assert decode_one(raw).ext_fields == {"i": props, "b": "主题"}


def test_a_body_of_several_buffers_is_counted_whole_and_not_joined() -> None:
    parts: list[Buffer] = [b"abc", memoryview(b"defg"), bytearray(b"h")]
    frame = encode(RemotingCommand(11, body=parts))
    assert frame[1] is parts[0] and frame[2] is parts[1] and frame[3] is parts[2]
    (length, word) = struct.unpack_from(">ii", frame[0])
    assert length == 4 + (word & 0xFFFFFF) + 8
    assert decode_one(b"".join(bytes(p) for p in frame)).body == b"abcdefgh"


def test_a_binary_header_keeps_the_last_of_duplicate_keys_and_drops_empty_values() -> None:
    def entry(key: bytes, value: bytes) -> bytes:
        return struct.pack(">h", len(key)) + key + struct.pack(">i", len(value)) + value

    ext = entry(b"topic", b"A") + entry(b"topic", b"B") + entry(b"tags", b"")
    header = struct.pack(">hBhiii", 105, 0, 407, 5, 0, 0) + struct.pack(">i", len(ext)) + ext
    frame = struct.pack(">ii", 4 + len(header), (1 << 24) | len(header)) + header
    assert decode_one(frame).ext_fields == {"topic": "B"}


def test_a_binary_header_remark_round_trips() -> None:
    cmd = RemotingCommand(1, remark="ça ne va pas", flag=1, serialize_type=SerializeType.ROCKETMQ)
    assert decode_one(frame_bytes(cmd)).remark == "ça ne va pas"


def test_a_code_too_large_for_the_binary_header_is_refused_when_encoding() -> None:
    with pytest.raises(FrameError):
        encode(RemotingCommand(200050, serialize_type=SerializeType.ROCKETMQ))


def test_a_frame_of_exactly_the_maximum_length_is_accepted() -> None:
    header = b'{"code":10}'
    body = b"x" * (1000 - 4 - len(header))
    assert len(FrameDecoder(max_frame_length=1000).feed(json_frame(header, body))[0].body or b"") == len(body)


BAD_FRAMES = {
    "length above the maximum": struct.pack(">i", (16 << 20) + 1),
    "negative length": struct.pack(">i", -5),
    "length shorter than the header word": struct.pack(">i", 3) + b"\x00\x00\x00",
    "header longer than the frame": struct.pack(">ii", 8, 5) + b"{}{}",
    "header that is not JSON": json_frame(b"{nope"),
    "JSON header that is an array": json_frame(b"[1,2]"),
    "JSON extFields that is a string": json_frame(b'{"code":1,"extFields":"x"}'),
    "JSON opaque that is not a number": json_frame(b'{"code":1,"opaque":"abc"}'),
    "JSON opaque beyond the Java int range": json_frame(b'{"code":1,"opaque":2147483648}'),
    "JSON code that is a boolean": json_frame(b'{"code":true}'),
    "unknown serialization type": struct.pack(">ii", 6, (7 << 24) | 2) + b"{}",
    "binary header shorter than its fixed part": struct.pack(">ii", 10, (1 << 24) | 6) + b"\x00" * 6,
    "binary remark longer than the header": struct.pack(">ii", 25, (1 << 24) | 21)
    + struct.pack(">hBhiii", 1, 0, 1, 1, 0, 1000) + struct.pack(">i", 0),
    "binary ext map longer than the header": struct.pack(">ii", 25, (1 << 24) | 21)
    + struct.pack(">hBhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">i", 50),
    "binary ext key longer than the map": struct.pack(">ii", 29, (1 << 24) | 25)
    + struct.pack(">hBhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">i", 4) + struct.pack(">h", 90) + b"ab",
    "binary ext text that is not UTF-8": struct.pack(">ii", 34, (1 << 24) | 30)
    + struct.pack(">hBhiii", 1, 0, 1, 1, 0, 0) + struct.pack(">i", 9)
    + struct.pack(">h", 2) + b"\xff\xfe" + struct.pack(">i", 1) + b"v",
}


@pytest.mark.parametrize("frame", BAD_FRAMES.values(), ids=list(BAD_FRAMES))
def test_a_malformed_frame_raises_frame_error(frame: bytes) -> None:
    with pytest.raises(FrameError):
        FrameDecoder().feed(frame)


def test_an_oversized_length_is_refused_before_the_frame_arrives() -> None:
    decoder = FrameDecoder(max_frame_length=1024)
    with pytest.raises(FrameError):
        decoder.feed(struct.pack(">i", 1025))


# --- any split of the stream ------------------------------------------------------

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=20)
int32 = st.integers(-(2**31), 2**31 - 1)


@st.composite
def commands(draw: st.DrawFn) -> RemotingCommand:
    binary = draw(st.booleans())
    key = text.filter(bool) if binary else text
    value = text.filter(bool) if binary else text
    return RemotingCommand(
        code=draw(st.integers(-(2**15), 2**15 - 1) if binary else int32),
        ext_fields=draw(st.none() | st.dictionaries(key, value, min_size=1 if binary else 0, max_size=5)),
        body=draw(st.none() | st.binary(min_size=1, max_size=300)),
        remark=draw(st.none() | text.filter(bool)),
        opaque=draw(int32),
        flag=draw(st.integers(0, 3)),
        language=draw(st.sampled_from(list(LanguageCode))),
        version=draw(st.integers(-(2**15), 2**15 - 1)),
        serialize_type=SerializeType.ROCKETMQ if binary else SerializeType.JSON,
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(commands(), min_size=1, max_size=6), st.data())
def test_any_split_of_a_valid_stream_decodes_to_the_same_commands(
    cmds: list[RemotingCommand], data: st.DataObject
) -> None:
    stream = b"".join(frame_bytes(c) for c in cmds)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    decoder = FrameDecoder()
    decoded: list[RemotingCommand] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)]):
        decoded += decoder.feed(stream[start:end])
    assert decoded == cmds
    assert decoder.buffered == 0


def test_a_stream_fed_one_byte_at_a_time_decodes_every_frame() -> None:
    cmds = [RemotingCommand(i, {"k": str(i)}, body=bytes(i)) for i in range(1, 6)]
    stream = b"".join(frame_bytes(c) for c in cmds)
    decoder = FrameDecoder()
    decoded = [cmd for i in range(len(stream)) for cmd in decoder.feed(stream[i : i + 1])]
    assert decoded == cmds


def test_json_header_text_is_what_orjson_reads_back() -> None:
    cmd = RemotingCommand(10, {"a": "b"}, remark="r", opaque=4)
    header = frame_bytes(cmd)[8:]
    assert list(orjson.loads(header)) == [
        "code", "extFields", "flag", "language", "opaque", "remark", "serializeTypeCurrentRPC", "version",
    ]


def test_non_string_ext_values_are_written_as_java_strings_in_both_header_types() -> None:
    fields: dict[str, Any] = {"queueId": 3, "unitMode": True}
    for serialize_type in (SerializeType.JSON, SerializeType.ROCKETMQ):
        cmd = RemotingCommand(11, fields, serialize_type=serialize_type)
        assert decode_one(frame_bytes(cmd)).ext_fields == {"queueId": "3", "unitMode": "true"}


@st.composite
def framed_garbage(draw: st.DrawFn) -> bytes:
    """A frame with a consistent length prefix around arbitrary header and body bytes."""
    serialize_type = draw(st.sampled_from([0, 1, 2]))
    if draw(st.booleans()) and serialize_type == 0:
        header = draw(st.sampled_from([b"{", b"[]", b"null", b'{"code":"x"}', b'{"extFields":[1]}', b'{"language":{}}']))
    else:
        header = draw(st.binary(max_size=80))
    body = draw(st.binary(max_size=20))
    return struct.pack(">ii", 4 + len(header) + len(body), (serialize_type << 24) | len(header)) + header + body


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), framed_garbage()))
def test_arbitrary_bytes_either_decode_or_raise_frame_error(data: bytes) -> None:
    try:
        commands = FrameDecoder().feed(data)
    except FrameError:
        return
    for cmd in commands:
        assert isinstance(cmd.code, int) and isinstance(cmd.opaque, int)
        assert cmd.ext_fields is None or all(type(v) is str for v in cmd.ext_fields.values())


def test_after_a_frame_error_the_decoder_refuses_the_rest_of_the_stream() -> None:
    decoder = FrameDecoder()
    good = frame_bytes(RemotingCommand(1))
    with pytest.raises(FrameError):
        decoder.feed(json_frame(b"{nope"))
    with pytest.raises(FrameError):
        decoder.feed(good)


def test_data_in_any_buffer_format_is_read_as_bytes() -> None:
    stream = frame_bytes(RemotingCommand(7, {"k": "v"}, body=b"12345678"))
    padded = stream + b"\x00" * (-len(stream) % 4)
    decoder = FrameDecoder()
    words = memoryview(bytearray(padded)).cast("I")  # 4-byte items, not bytes
    (cmd,) = decoder.feed(words)
    assert cmd.body == b"12345678" and decoder.buffered == len(padded) - len(stream)
