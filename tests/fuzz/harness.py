"""Hostile frames against a running NameServer and broker: what to send, how, and what must hold.

Used by the fuzz tests (hypothesis, bounded, in the suite) and by
`bench/fuzz.py` (longer runs, optionally coverage-guided by atheris). Every
exchange opens its own loopback connection with a blocking socket, sends the
bytes, and reads until every request in them was answered, the server closed
the connection, or the time ran out. What must hold:

* every request of a well-formed stream is answered (same opaque), with a
  response code and a remark free of Python's exception texts;
* a stream that is not well formed only closes its own connection;
* the servers stay up and answer a health request on a fresh connection;
* messages acknowledged before the run are all still readable after it.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from orbitmq.common.properties import encode_properties
from orbitmq.common.record import iter_records
from orbitmq.errors import FrameError
from orbitmq.remoting.codec import FrameDecoder, encode
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RPC_ONEWAY, RPC_TYPE_RESPONSE, RemotingCommand, SerializeType
from tests.support.procs import ServerProcess, orbitmq_command, start_server

#: Texts Python puts in its exceptions: none may reach a client in a remark.
PYTHON_TEXT = re.compile(
    r"Traceback|object has no attribute|invalid literal for|unsupported operand|'NoneType'|not subscriptable"
    r"|is not iterable|index out of range|positional argument|unhashable type|could not convert"
    r"|maximum recursion depth|codec can't|object of type|must be str, not|not supported between"
    r"|\b(?:Key|Type|Attribute|Index|Value|Recursion|UnicodeDecode|JSONDecode|ZeroDivision|Overflow)Error\b"
    r"|unpack requires|argument must be|expected str|NoneType"
)
#: The log line of a server whose handler met an exception it did not expect (connection.py's boundary).
UNEXPECTED = re.compile(r"handler for request code -?\d+ from \S+ failed\s*$")

#: Every header field name the broker and NameServer read (RocketMQ's spelling).
FIELD_NAMES = (
    "topic", "queueId", "queueOffset", "consumerGroup", "producerGroup", "maxMsgNums", "sysFlag",
    "commitOffset", "suspendTimeoutMillis", "subscription", "subVersion", "expressionType", "offset",
    "timestamp", "key", "maxNum", "beginTimestamp", "endTimestamp", "msgId", "group", "clientID", "clientId",
    "defaultTopic", "defaultTopicQueueNums", "flag", "bornTimestamp", "properties", "reconsumeTimes",
    "unitMode", "batch", "maxReconsumeTimes", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m",
    "n", "readQueueNums", "writeQueueNums", "perm", "topicFilterType", "topicSysFlag", "order", "brokerName",
    "brokerAddr", "clusterName", "haServerAddr", "brokerId", "namespace", "value", "delayLevel",
    "originMsgId", "originTopic", "tranStateTableOffset", "commitLogOffset", "commitOrRollback",
    "fromTransactionCheck", "transactionId", "accessKey", "secretKey", "srcGroup", "destGroup", "isForce",
    "compressed", "heartbeatTimeoutMillis", "bname", "isOrder", "removeOffset", "offline", "statsName",
    "statsKey", "consumeFromWhere", "clientAddr", "jstackEnable", "msgRegion", "traceOn", "bodyCrc32",
    "whiteRemoteAddress", "admin", "defaultTopicPerm", "defaultGroupPerm", "topicPerms", "groupPerms",
    "globalWhiteAddrs", "aclFileFullPath", "filterGroups", "compareGroup", "uniqueKeyQuery", "cluster",
    "index", "count", "changed", "wipeTopicCount", "addTopicCount", "acceptStandardJsonOnly", "Signature",
)

#: Numbers as a hostile client writes them: Java's edges and what Python's int() takes but Java does not.
NUMBERS = (
    "0", "1", "-1", "7", "16", "32", "2147483647", "2147483648", "-2147483648", "-2147483649",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "1e3", "1.5", "\u0663", "1_0", " 2 ", "0x10", "+5", "00012", "-0", "NaN", "", "null", "true", "99999999999999999999",
)
TEXTS = (
    "T", "TBW102", "%RETRY%g", "%DLQ%g", "../x", "/tmp/x", "..", ".", "a\x00b", "x" * 300, "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC", "rmq_sys_wheel_timer", "DefaultCluster", "broker-a", "\u00fc\u6f22\u5b57",
    "*", "a||b", "a = 1", "(((", "TAGS IS NOT NULL", "SQL92", "TAG", "CLUSTERING", "BROADCASTING",
    "127.0.0.1:10911", "[::1]:1", "host", "0A000001000029FF0000000000000000", "7F0000010000000000000000",
    "KEYS\x01k\x02TAGS\x01t\x02", "\x01\x02", "DELAY\x013\x02", "TIMER_DELAY_SEC\x011\x02",
    "TRAN_MSG\x01true\x02PGROUP\x01pg\x02", "g", "CID_RMQ_SYS_TRANS", "TOOLS_CONSUMER", "%RETRY%",
)
#: Bodies of the wrong shape, of a plausible shape with hostile values, and raw bytes.
BODIES: tuple[bytes | None, ...] = (
    None, b"", b"null", b"[]", b"{}", b"1", b'"s"', b"true", b'{"a":null}', b"[[[[[]]]]]", b"{" * 5000,
    b'{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T","subString":"*"}]}]}',
    b'{"clientID":"c","consumerDataSet":[{"groupName":null,"subscriptionDataSet":[null,1,{"topic":null}]}]}',
    (b'{"clientID":"c","consumerDataSet":[{"groupName":"g","subscriptionDataSet":[{"topic":"T",'
    b'"subString":"a","codeSet":["x"],"subVersion":"v","expressionType":"SQL92"}]}]}'),
    b'{"consumerGroup":"g","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":-1}]}',
    b'{"consumerGroup":"g","clientId":"c","mqSet":[null,{"queueId":"x"}]}',
    b'{"offsetTable":{"{\\"topic\\":\\"T\\",\\"brokerName\\":\\"b\\",\\"queueId\\":0}":9223372036854775807}}',
    (b'{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"topicName":"../x","perm":"q"}}},'
    b'"filterServerList":[1]}'),
    b'{"topicConfigTable":{"T":{"readQueueNums":-5}},"dataVersion":{"counter":"x","timestamp":[]}}',
    b'{"subscriptionData":{"topic":"T","subString":"a >","expressionType":"SQL92"}}',
    b'{"groupName":"g","retryQueueNums":-1,"retryMaxTimes":"x"}', b'{"groupName":"../g"}',
    b"autoCreateTopicEnable=maybe\nmaxSuspendedPulls=-3\n", b"defaultTopicQueueNums=0\n", b"=\n==\n",
    b"listenPort=1\n", b"\xff\xfe\x00", b"\x00" * 64, os.urandom(16),
    b"x" * 70_000, b"KEYS\x01k\x02TAGS\x01t\x02",
)
#: broker.conf keys a fuzz body may set with hostile values; brokerPermission is left out so the
#: fuzz cannot legitimately make the acknowledged messages unreadable.
CONFIG_KEYS = ("autoCreateTopicEnable", "defaultTopicQueueNums", "maxSuspendedPulls", "messageDelayLevel",
               "enablePropertyFilter", "longPollingEnable", "shortPollingTimeMills", "autoCreateTopicPerMinute")

#: Codes whose requests may park (long polling): their wait fields are shortened so answers come in time.
WAIT_FIELDS = {int(RequestCode.PULL_MESSAGE): ("suspendTimeoutMillis", "e")}

ALL_CODES = tuple(int(c) for c in RequestCode)


def frame_bytes(cmd: RemotingCommand) -> bytes:
    return b"".join(bytes(part) for part in encode(cmd))


def request(
    code: int, fields: dict[str, str] | None = None, body: bytes | None = None, *,
    serialize: SerializeType = SerializeType.JSON, language: int = 0, version: int = 401, flag: int = 0,
    opaque: int = 1,
) -> bytes:
    """One request frame; wait fields of long-polling codes are capped at 50 ms."""
    if fields and code in WAIT_FIELDS:
        for name in WAIT_FIELDS[code]:
            if name in fields:
                fields[name] = "50"
    cmd = RemotingCommand(code, fields or None, body, None, opaque, flag & ~RPC_TYPE_RESPONSE, language, version,
                          serialize)
    return frame_bytes(cmd)


@dataclass
class Outcome:
    """What one exchange produced."""

    expected: list[int]  # opaques that must be answered (empty when the stream is not well formed)
    well_formed: bool
    codes: dict[int, int] = field(default_factory=dict)  # opaque -> request code, for the reports
    answers: list[RemotingCommand] = field(default_factory=list)
    closed: bool = False
    timed_out: bool = False

    def problems(self) -> list[str]:
        """What this outcome breaks of the rules in the module docstring."""
        found: list[str] = []
        got = {a.opaque for a in self.answers}
        missing = [o for o in self.expected if o not in got]
        if missing:
            codes = sorted({self.codes.get(o, -1) for o in missing})
            found.append(f"request code(s) {codes} not answered "
                         f"({'timed out' if self.timed_out else 'connection closed'})")
        for a in self.answers:
            code = self.codes.get(a.opaque, -1)
            if not isinstance(a.code, int):
                found.append(f"request code {code} answered without a numeric code: {a.code!r}")
            if a.remark and PYTHON_TEXT.search(a.remark):
                found.append(f"request code {code} answered {a.code} with Python's text: {a.remark[:300]!r}")
        if not self.well_formed and not self.closed:
            found.append("a malformed stream did not close its connection")
        return found


def expected_answers(data: bytes, max_frame_length: int = 16 << 20) -> tuple[list[int], bool]:
    opaques, well_formed, _ = decode_requests(data, max_frame_length)
    return opaques, well_formed


def decode_requests(data: bytes, max_frame_length: int = 16 << 20) -> tuple[list[int], bool, dict[int, int]]:
    """(opaques of the requests in `data` that expect an answer, whether the whole stream decodes).

    The server decodes with the same codec. A stream with a bad frame may have
    its earlier requests answered or not (that depends on how reads split it),
    so then nothing is required but the close.
    """
    decoder = FrameDecoder(max_frame_length)
    try:
        commands = decoder.feed(data)
    except FrameError:
        return [], False, {}
    requests = [c for c in commands if not c.flag & RPC_TYPE_RESPONSE and not c.flag & RPC_ONEWAY]
    return [c.opaque for c in requests], True, {c.opaque: c.code for c in requests}


def _address(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host.strip("[]"), int(port)


def exchange(addr: str, data: bytes, timeout: float = 8.0) -> Outcome:
    """Send `data` on a fresh connection; read answers until all came, the server closed, or `timeout`."""
    expected, well_formed, codes = decode_requests(data)
    outcome = Outcome(expected, well_formed, codes)
    deadline = time.monotonic() + timeout
    decoder = FrameDecoder(64 << 20)
    with socket.create_connection(_address(addr), timeout=timeout) as sock:
        try:
            sock.sendall(data)
        except OSError:
            outcome.closed = True
            return outcome
        want = len(expected) if well_formed else None  # a malformed stream: read until the server closes
        while want is None or len(outcome.answers) < want:
            left = deadline - time.monotonic()
            if left <= 0:
                outcome.timed_out = True
                break
            sock.settimeout(left)
            try:
                chunk = sock.recv(1 << 20)
            except TimeoutError:
                outcome.timed_out = True
                break
            except OSError:
                outcome.closed = True
                break
            if not chunk:
                outcome.closed = True
                break
            try:
                frames = decoder.feed(chunk)
            except FrameError as exc:
                raise AssertionError(f"the server wrote a frame we cannot decode: {exc}") from None
            # Requests the broker sends us (NOTIFY_CONSUMER_IDS_CHANGED after a heartbeat) are not answers.
            outcome.answers += [f for f in frames if f.flag & RPC_TYPE_RESPONSE]
    return outcome


# --- health and the acknowledged messages ---------------------------------------------------


def ask(addr: str, code: int, fields: dict[str, str] | None = None, body: bytes | None = None,
        timeout: float = 10.0) -> RemotingCommand:
    outcome = exchange(addr, request(code, fields, body), timeout)
    if not outcome.answers:
        raise AssertionError(f"{addr} did not answer request code {code}: {outcome}")
    return outcome.answers[0]


def check_alive(broker: str, namesrv: str) -> None:
    runtime = ask(broker, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert runtime.code == ResponseCode.SUCCESS, runtime.remark
    cluster = ask(namesrv, RequestCode.GET_BROKER_CLUSTER_INFO)
    assert cluster.code == ResponseCode.SUCCESS, cluster.remark


@dataclass
class Acknowledged:
    """Messages the broker acknowledged before the fuzzing: they must all stay readable."""

    topic: str
    bodies: list[bytes]


def send_acknowledged(broker: str, count: int = 20) -> Acknowledged:
    topic = f"FUZZ_KEEP_{os.getpid()}_{time.monotonic_ns() % 1_000_000}"
    create = {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": "1", "writeQueueNums": "1", "perm": "6",
        "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0", "order": "false",
    }
    made = ask(broker, RequestCode.UPDATE_AND_CREATE_TOPIC, create)
    assert made.code == ResponseCode.SUCCESS, made.remark
    bodies = [f"keep-{i}".encode() for i in range(count)]
    for body in bodies:
        fields = {
            "a": "FUZZ_PG", "b": topic, "c": "TBW102", "d": "1", "e": "0", "f": "0",
            "g": str(int(time.time() * 1000)), "h": "0", "i": encode_properties({"KEYS": "k"}), "j": "0",
            "k": "false", "m": "false",
        }
        sent = ask(broker, RequestCode.SEND_MESSAGE_V2, fields, body)
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    return Acknowledged(topic, bodies)


def check_readable(broker: str, kept: Acknowledged) -> None:
    got: list[bytes] = []
    offset = 0
    while len(got) < len(kept.bodies):
        fields = {
            "consumerGroup": "FUZZ_CHECK", "topic": kept.topic, "queueId": "0", "queueOffset": str(offset),
            "maxMsgNums": "32", "sysFlag": "4", "commitOffset": "0", "suspendTimeoutMillis": "0",
            "subscription": "*", "subVersion": "0", "expressionType": "TAG",
        }
        answer = ask(broker, RequestCode.PULL_MESSAGE, fields)
        assert answer.code == ResponseCode.SUCCESS, f"acknowledged messages unreadable: {answer.code} {answer.remark}"
        records = list(iter_records(answer.body_bytes()))
        assert records, "a pull of acknowledged messages returned none"
        got += [bytes(r.body or b"") for r in records]
        offset += len(records)
    assert got == kept.bodies, "acknowledged messages changed"


#: Findings of this fuzz whose fix belongs to another item of issue 10 (another branch), matched by
#: text. The tests let these pass and the bench labels them; remove an entry once its fix is merged.
FIXED_ELSEWHERE: dict[str, str] = {}


def fixed_elsewhere(problem: str) -> str | None:
    """The issue item that owns a known finding, or None for a new one."""
    return next((item for text, item in FIXED_ELSEWHERE.items() if text in problem), None)


def start_dev(root: Path) -> ServerProcess:
    """`orbitmq dev` (NameServer and broker) in a child process under `root`: SQL92 on, small files."""
    conf = root / "broker.conf"
    conf.write_text("enablePropertyFilter=true\nmappedFileSizeCommitLog=16777216\nmappedFileSizeConsumeQueue=120000\n")
    return start_server(
        orbitmq_command("dev", "--store", str(root / "data"), "--namesrv-port", "0", "--broker-port", "0",
                        "--host", "127.0.0.1", "-c", str(conf)),
        listeners=2,
    )


def unexpected_log_lines(output: Iterable[str]) -> list[str]:
    """Each unexpected failure a server logged: its log line, where it was raised, and the exception."""
    found: list[str] = []
    lines = [line.rstrip() for line in output]
    for i, line in enumerate(lines):
        if not UNEXPECTED.search(line):
            continue
        trace: list[str] = []
        for follow in lines[i + 1 : i + 80]:
            if follow and not follow.startswith((" ", "Traceback")):
                trace.append(follow)  # the exception line ends the traceback
                break
            if follow.strip().startswith("File "):
                trace.append(follow.strip())
        found.append(" | ".join([line.split(": ", 1)[-1], *trace[-2:]]))
    return found


def json_body(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
