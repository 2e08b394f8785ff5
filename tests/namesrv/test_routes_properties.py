"""Route table invariants under any sequence of registrations, removals and expiry (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.namesrv.routes import BrokerRegistration, DataVersion, RouteTable, TopicConfig

ADDRS = [f"10.0.0.{i}:10911" for i in range(1, 5)]
NAMES = ["broker-a", "broker-b"]
CLUSTERS = ["C1", "C2"]
TOPICS = ["T1", "T2", "T3"]

registration = st.builds(
    lambda addr, name, cluster, broker_id, topics, counter, conn: (
        "register",
        BrokerRegistration(
            cluster, addr, name, broker_id, "", DataVersion(0, counter),
            {t: TopicConfig(t) for t in topics}, (), conn,
        ),
    ),
    st.sampled_from(ADDRS), st.sampled_from(NAMES), st.sampled_from(CLUSTERS), st.integers(0, 2),
    st.sets(st.sampled_from(TOPICS)), st.integers(0, 3), st.integers(1, 3),
)
operation = st.one_of(
    registration,
    st.tuples(st.just("unregister"), st.sampled_from(CLUSTERS), st.sampled_from(ADDRS), st.sampled_from(NAMES),
              st.integers(0, 2)),
    st.tuples(st.just("close"), st.integers(1, 3)),
    st.tuples(st.just("tick"), st.integers(0, 2000)),
    st.tuples(st.just("delete"), st.sampled_from(TOPICS), st.sampled_from([None, *CLUSTERS])),
    st.tuples(st.just("wipe"), st.sampled_from(NAMES)),
)


class Clock:
    now = 0

    def __call__(self) -> int:
        return self.now


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, max_size=40))
def test_every_route_points_at_registered_brokers_and_clusters_hold_only_known_names(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    clock = Clock()
    table = RouteTable(clock=clock, default_expiry_ms=1000)
    for op in ops:
        kind = op[0]
        if kind == "register":
            table.register_broker(op[1])
        elif kind == "unregister":
            table.unregister_broker(*op[1:])
        elif kind == "close":
            table.on_connection_closed(op[1])
        elif kind == "tick":
            clock.now += op[1]
            table.scan_not_active_brokers()
        elif kind == "delete":
            table.delete_topic(op[1], op[2])
        else:
            table.wipe_write_perm(op[1])

        info = table.cluster_info()
        named_in_clusters = {n for names in info.cluster_addr_table.values() for n in names}
        assert all(names for names in info.cluster_addr_table.values()), "no empty cluster survives"
        assert all(b.broker_addrs for b in info.broker_addr_table.values()), "no broker name without addresses"
        for topic in table.all_topics():
            route = table.pick_route(topic)
            if route is None:
                continue
            assert route.queue_datas, topic
            served = {b.broker_name for b in route.broker_datas}
            assert served <= set(info.broker_addr_table)
            assert served <= named_in_clusters
        # One address has exactly one broker id.
        addrs = [a for b in info.broker_addr_table.values() for a in b.broker_addrs.values()]
        assert len(addrs) == len(set(addrs))
        # Every live broker address is listed under some broker name.
        assert set(table.broker_addrs()) <= set(addrs)
