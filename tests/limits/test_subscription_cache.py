"""Issue 10 item 6: pulls carrying their own subscription cannot make the broker hold unbounded memory.

The attack: pulls with the SUBSCRIPTION flag and distinct, long tag expressions.
Each parsed expression was cached (up to 4,096 of any size), so 200 pulls of
1 MB held 2.8 GB. Now the cache is bounded by bytes and an expression over 64 Ki
characters is refused with SUBSCRIPTION_PARSE_FAILED before it is parsed.
"""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import pytest

from orbitmq.broker.server import Broker
from orbitmq.broker.subcache import DEFAULT_CACHE_BYTES, MAX_EXPRESSION_LENGTH, BoundedCache
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.transport import RemotingClient
from tests.broker.helpers import pull
from tests.broker_features.inproc import addr_of, create_topic, make_config
from tests.broker_features.test_sql92_filter import check_client

pytestmark = pytest.mark.timeout(120)



def long_tags(seed: int, count: int = 6000) -> str:
    """About 50 KB of distinct tags, parsed into ~1.1 MB of strings and hash codes."""
    return "||".join(f"t{seed}x{j}" for j in range(count))


async def test_distinct_long_tag_expressions_leave_bounded_memory_behind(tmp_path: Path, client: RemotingClient) -> None:
    async with Broker(make_config(tmp_path)) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        warm = await pull(client, addr, "T", "CG", 0, subscription="warm")
        assert warm.code == ResponseCode.PULL_NOT_FOUND
        tracemalloc.start()
        try:
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for i in range(40):  # ~44 MB of parsed subscriptions if all were kept
                response = await pull(client, addr, "T", "CG", 0, subscription=long_tags(i))
                assert response.code == ResponseCode.PULL_NOT_FOUND, response.remark
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        assert held < DEFAULT_CACHE_BYTES + (8 << 20), f"{held} bytes held after 40 distinct pulls"


async def test_an_expression_over_the_limit_is_refused_unparsed_at_pull_heartbeat_and_check(
    tmp_path: Path, client: RemotingClient
) -> None:
    huge = "a||" * (MAX_EXPRESSION_LENGTH // 3 + 1)
    async with Broker(make_config(tmp_path, enablePropertyFilter="true")) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        for kind in ("TAG", "SQL92"):
            response = await pull(client, addr, "T", "CG", 0, subscription=huge, expression_type=kind)
            assert response.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert f"exceeds the broker's limit of {MAX_EXPRESSION_LENGTH}" in (response.remark or "")
            code, _ = await check_client(client, addr, kind, huge)
            assert code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
        fine = await pull(client, addr, "T", "CG", 0, subscription="a||b")
        assert fine.code == ResponseCode.PULL_NOT_FOUND


async def test_a_long_sql92_selector_is_compiled_once_off_the_loop_and_then_served_from_the_cache(
    tmp_path: Path, client: RemotingClient
) -> None:
    selector = " OR ".join(f"a = {i}" for i in range(1500))  # ~13 KB: compiled in a worker thread
    async with Broker(make_config(tmp_path, enablePropertyFilter="true")) as broker:
        addr = addr_of(broker)
        await create_topic(client, addr, "T")
        for _ in range(3):
            response = await pull(client, addr, "T", "CG", 0, subscription=selector, expression_type="SQL92")
            assert response.code == ResponseCode.PULL_NOT_FOUND, response.remark
        assert selector in broker.filters.compiled and len(broker.filters.compiled) == 1
        bad = selector + " OR"
        for _ in range(2):
            refused = await pull(client, addr, "T", "CG", 0, subscription=bad, expression_type="SQL92")
            assert refused.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
            assert "Traceback" not in (refused.remark or "") and len(refused.remark or "") < 1000
        assert bad in broker.filters.compiled  # the refusal is remembered: sent again, it costs no parse


def test_the_bounded_cache_evicts_least_recently_used_entries_by_bytes_and_count() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_bytes=100, max_entries=3)
    cache.put("a", 1, 40)
    cache.put("b", 2, 40)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3, 40)
    assert "b" not in cache and cache.bytes == 80
    cache.put("d", 4, 10)
    cache.put("e", 5, 10)
    assert len(cache) == 3 and "a" not in cache
    cache.put("big", 6, 101)
    assert "big" not in cache and cache.bytes <= 100
