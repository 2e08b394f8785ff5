"""The IndexService against a plain-Python model, and its files after a SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.store.api import DispatchRequest
from orbitmq.store.indexfile import IndexService

T0 = 1_700_000_000_000
_FAR = 2**62


def _req(topic: str, offset: int, ts: int, keys: str, uniq: str) -> DispatchRequest:
    return DispatchRequest(
        topic=topic, queue_id=0, commit_log_offset=offset, msg_size=1, tags_code=0, store_timestamp=ts,
        consume_queue_offset=0, keys=keys, uniq_key=uniq, sys_flag=0, prepared_transaction_offset=0,
    )


_message = st.tuples(
    st.sampled_from(["T", "U"]),
    st.lists(st.sampled_from(["a", "b", "c", "Aa", "BB", "d"]), max_size=3),  # "Aa"/"BB" share a hash
    st.booleans(),
)


@settings(max_examples=40, deadline=None)
@given(messages=st.lists(_message, min_size=1, max_size=60), entries=st.integers(2, 9), slots=st.integers(1, 5),
       cut=st.integers(0, 70))
def test_queries_and_truncation_agree_with_a_model(messages, entries, slots, cut) -> None:  # type: ignore[no-untyped-def]
    with tempfile.TemporaryDirectory() as d:
        svc = IndexService(d, slots, entries, max_msgs_num_batch=1000, clock_ms=lambda: T0)
        model: list[tuple[str, str, int]] = []  # (topic, key, offset) in dispatch order
        for i, (topic, keys, with_uniq) in enumerate(messages):
            uniq = f"U{i}" if with_uniq else ""
            svc.dispatch([_req(topic, i * 10, T0 + i * 1000, " ".join(keys), uniq)])
            if uniq:
                model.append((topic, uniq, i * 10))
            model.extend((topic, k, i * 10) for k in keys)

        def expected(topic: str, key: str, limit: int) -> list[int]:
            hits = [off for t, k, off in reversed(model) if t == topic and k == key]
            return list(dict.fromkeys(hits))[:limit]

        def check() -> None:
            for topic in ("T", "U"):
                for key in ("a", "b", "c", "Aa", "d", "U0", "U3"):
                    got = svc.query_offsets(topic, key, 1000, 0, _FAR).phy_offsets
                    # hash collisions may add offsets of other keys; every expected one is there, in order
                    want = expected(topic, key, 1000)
                    assert [o for o in got if o in want] == want
                    assert set(got) <= {off for t, _, off in model if t == topic}

        check()
        svc.truncate_from(cut * 10)
        model = [m for m in model if m[2] < cut * 10]
        check()
        svc.close()
        reopened = IndexService(d, slots, entries, max_msgs_num_batch=1000)
        reopened.load()
        svc = reopened
        check()
        svc.close()


_WRITER = textwrap.dedent(
    """
    import sys, time
    from orbitmq.store.api import DispatchRequest
    from orbitmq.store.indexfile import IndexService
    svc = IndexService(sys.argv[1], 101, 500)
    for i in range(2000):
        svc.dispatch([DispatchRequest(topic="T", queue_id=0, commit_log_offset=i * 100, msg_size=100, tags_code=0,
                                      store_timestamp=1700000000000 + i, consume_queue_offset=i, keys=f"k{i % 50}",
                                      uniq_key=f"u{i}", sys_flag=0, prepared_transaction_offset=0)])
    print("indexed", flush=True)
    time.sleep(60)
    """
)


def test_index_written_before_a_sigkill_is_all_there_after_restart(tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(index_dir)], stdout=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "indexed"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    svc = IndexService(str(index_dir), 101, 500)
    svc.load()
    assert len(svc.files) == 9  # 4000 keys, 499 per file
    assert svc.query_offsets("T", "u1234", 64, 0, _FAR).phy_offsets == [123400]
    assert svc.query_offsets("T", "k7", 64, 0, _FAR).phy_offsets == [i * 100 for i in range(1957, -1, -50)][:64]
    assert svc.index_last_update_phyoffset == 199900
    svc.close()
