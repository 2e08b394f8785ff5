"""Issue 10's proof: hostile frames against every request code of a real NameServer and broker.

`orbitmq dev` runs in a child process (NameServer and broker, SQL92 on, small
store files). Hypothesis draws requests for every RequestCode (and unknown
codes) with hostile header values and bodies of every shape, in both header
serializations, and mutated or random byte streams; see tests/fuzz/harness.py
for what must hold. The runs are bounded (examples and seconds) so the file
takes well under a minute; `./run bench fuzz` runs the same for longer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from orbitmq.remoting.command import RPC_ONEWAY, SerializeType
from tests.fuzz import harness
from tests.fuzz.strategies import mutated_streams, requests
from tests.support.procs import ServerProcess

pytestmark = pytest.mark.timeout(180)

FUZZ = settings(
    deadline=None,
    database=None,
    derandomize=True,  # the same inputs on every run; `./run bench fuzz` explores at random
    phases=[Phase.explicit, Phase.generate],  # no shrinking in the suite: a failure prints its input
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass
class Servers:
    process: ServerProcess
    namesrv: str
    broker: str
    kept: harness.Acknowledged


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    process = harness.start_dev(tmp_path_factory.mktemp("fuzz"))
    try:
        namesrv, broker = process.addresses[0], process.addresses[1]
        yield Servers(process, namesrv, broker, harness.send_acknowledged(broker))
    finally:
        process.stop()


def check_after(servers: Servers) -> None:
    assert servers.process.popen.poll() is None, "the server process died"
    harness.check_alive(servers.broker, servers.namesrv)
    harness.check_readable(servers.broker, servers.kept)
    unexpected = [line for line in harness.unexpected_log_lines(servers.process.output)
                  if not harness.fixed_elsewhere(line)]
    assert not unexpected, "handlers met exceptions they did not expect:\n" + "\n".join(unexpected[:20])


def run_requests(addr: str, examples: int, codes: tuple[int, ...]) -> None:
    @settings(FUZZ, max_examples=examples)
    @given(data=requests(codes))
    def fuzz(data: bytes) -> None:
        problems = [p for p in harness.exchange(addr, data).problems() if not harness.fixed_elsewhere(p)]
        assert not problems, problems

    fuzz()


def test_every_broker_request_code_answers_hostile_headers_and_bodies_with_a_code(servers: Servers) -> None:
    run_requests(servers.broker, int(os.environ.get("ORBITMQ_FUZZ_EXAMPLES", "2000")), harness.ALL_CODES)
    check_after(servers)


def test_every_namesrv_request_code_answers_hostile_headers_and_bodies_with_a_code(servers: Servers) -> None:
    run_requests(servers.namesrv, int(os.environ.get("ORBITMQ_FUZZ_EXAMPLES", "2000")) // 3, harness.ALL_CODES)
    check_after(servers)


def test_mutated_and_random_streams_close_only_their_own_connection(servers: Servers) -> None:
    @settings(FUZZ, max_examples=int(os.environ.get("ORBITMQ_FUZZ_EXAMPLES", "2000")) // 2)
    @given(data=mutated_streams(harness.ALL_CODES), to_broker=st.booleans())
    def fuzz(data: bytes, to_broker: bool) -> None:
        outcome = harness.exchange(servers.broker if to_broker else servers.namesrv, data)
        problems = [p for p in outcome.problems() if not harness.fixed_elsewhere(p)]
        assert not problems, problems

    fuzz()
    check_after(servers)


def test_the_harness_sees_a_stream_with_a_bad_frame_and_counts_only_answered_requests() -> None:
    good = harness.request(28, opaque=5)
    oneway = harness.request(28, opaque=6, flag=RPC_ONEWAY)
    assert harness.expected_answers(good + oneway) == ([5], True)
    assert harness.expected_answers(good + b"\x7f\xff\xff\xff\x00\x00\x00\x00") == ([], False)
    binary = harness.request(28, {"topic": "T"}, serialize=SerializeType.ROCKETMQ, opaque=7)
    assert harness.expected_answers(binary) == ([7], True)
    assert harness.PYTHON_TEXT.search("invalid literal for int() with base 10: 'x'")
    assert not harness.PYTHON_TEXT.search("topic[x] not exist, apply first please!")

