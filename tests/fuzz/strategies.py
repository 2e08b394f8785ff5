"""Hypothesis strategies for hostile requests and byte streams (see harness.py for their use)."""

from __future__ import annotations

import struct

from hypothesis import strategies as st

from orbitmq.remoting.command import RPC_ONEWAY, SerializeType
from tests.fuzz import harness

values = st.one_of(
    st.sampled_from(harness.NUMBERS),
    st.sampled_from(harness.TEXTS),
    st.text(max_size=24),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
)

#: Fields most handlers require, with ordinary values: hostile values drawn on top of these reach
#: past the "field is null" checks into the handlers' logic.
PLAUSIBLE = {
    "topic": "FZ", "consumerGroup": "FZG", "producerGroup": "FZP", "group": "FZG", "queueId": "0",
    "queueOffset": "0", "offset": "0", "maxMsgNums": "4", "sysFlag": "4", "commitOffset": "0",
    "suspendTimeoutMillis": "0", "subscription": "*", "subVersion": "0", "expressionType": "TAG",
    "timestamp": "0", "key": "k", "maxNum": "4", "beginTimestamp": "0", "endTimestamp": "9999999999999",
    "clientID": "c1", "clientId": "c1", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "flag": "0",
    "bornTimestamp": "1", "properties": "", "reconsumeTimes": "0", "readQueueNums": "1", "writeQueueNums": "1",
    "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false", "brokerName": "broker-a",
    "brokerAddr": "127.0.0.1:1", "clusterName": "DefaultCluster", "haServerAddr": "127.0.0.1:2", "brokerId": "0",
    "namespace": "ns", "value": "v", "delayLevel": "0", "srcGroup": "FZG", "destGroup": "FZH",
    "commitLogOffset": "0", "tranStateTableOffset": "0", "commitOrRollback": "8", "msgId": "x",
    "a": "FZP", "b": "FZ", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0", "i": "", "j": "0",
    "k": "false", "m": "false",
}

header_fields = st.one_of(
    st.dictionaries(st.sampled_from(harness.FIELD_NAMES), values, max_size=14),
    st.builds(
        lambda base, hostile: {**base, **hostile},
        st.dictionaries(st.sampled_from(sorted(PLAUSIBLE)), st.nothing(), max_size=0).map(lambda _: dict(PLAUSIBLE)),
        # Hostile values mostly for the fields handlers read, sometimes for any field.
        st.dictionaries(st.sampled_from(sorted(PLAUSIBLE)) | st.sampled_from(harness.FIELD_NAMES), values,
                        min_size=1, max_size=3),
    ),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=16)
    | st.sampled_from(harness.TEXTS),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(harness.FIELD_NAMES) | st.text(max_size=8), children, max_size=5),
    max_leaves=20,
)

config_bodies = st.lists(
    st.tuples(st.sampled_from(harness.CONFIG_KEYS), st.sampled_from(harness.NUMBERS) | st.sampled_from(harness.TEXTS)),
    max_size=4,
).map(lambda pairs: "".join(f"{k}={v}\n" for k, v in pairs).encode("utf-8", "surrogatepass"))

bodies = st.one_of(
    st.sampled_from(harness.BODIES),
    st.binary(max_size=512),
    json_values.map(harness.json_body),
    config_bodies,
)


@st.composite
def requests(draw: st.DrawFn, codes: tuple[int, ...]) -> bytes:
    """One request frame: a known code (sometimes an unknown one), hostile fields and body."""
    code = draw(st.sampled_from(codes) | st.integers(min_value=-(2**31), max_value=2**31 - 1))
    serialize = draw(st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ]))
    if serialize == SerializeType.ROCKETMQ and not -32768 <= code <= 32767:
        serialize = SerializeType.JSON  # the binary header holds the code in a short
    return harness.request(
        code, draw(header_fields), draw(bodies), serialize=serialize,
        language=draw(st.sampled_from([0, 1, 9, 12, 255])), version=draw(st.integers(-32768, 32767)),
        flag=draw(st.sampled_from([0, 0, 0, RPC_ONEWAY, 0x7FFFFFFC])),
        opaque=draw(st.integers(min_value=-(2**31), max_value=2**31 - 1)),
    )


@st.composite
def mutated_streams(draw: st.DrawFn, codes: tuple[int, ...]) -> bytes:
    """A few requests back to back, then bytes flipped, cut, inserted or a length prefix rewritten; or noise."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.binary(min_size=1, max_size=2048))
    data = bytearray(b"".join(draw(st.lists(requests(codes), min_size=1, max_size=3))))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "insert", "length", "header_length", "serialize"]))
        pos = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "length" and len(data) >= 4:
            data[0:4] = struct.pack(">i", draw(st.integers(-(2**31), 2**31 - 1)))
        elif op == "header_length" and len(data) >= 8:
            data[5:8] = draw(st.binary(min_size=3, max_size=3))
        elif op == "serialize" and len(data) >= 8:
            data[4] = draw(st.integers(0, 255))
    return bytes(data) or b"\x00"
