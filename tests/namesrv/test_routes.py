"""The route table as pure state: registrations, queries, expiry and removal, with a fake clock."""

from __future__ import annotations

from orbitmq.namesrv.routes import (
    BrokerRegistration,
    DataVersion,
    QueueData,
    RouteTable,
    TopicConfig,
)

V1 = DataVersion(1, 1)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def master(
    name: str = "broker-a",
    addr: str = "10.0.0.1:10911",
    cluster: str = "DefaultCluster",
    topics: dict[str, TopicConfig] | None = None,
    version: DataVersion = V1,
    connection_id: int | None = 1,
    broker_id: int = 0,
    timeout_ms: int | None = None,
) -> BrokerRegistration:
    return BrokerRegistration(
        cluster_name=cluster,
        broker_addr=addr,
        broker_name=name,
        broker_id=broker_id,
        ha_server_addr=addr.rsplit(":", 1)[0] + ":10912",
        data_version=version,
        topic_configs=topics if topics is not None else {"T": TopicConfig("T", 4, 4)},
        connection_id=connection_id,
        timeout_ms=timeout_ms,
    )


def test_master_registration_creates_a_route_with_its_queues_and_addresses() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master())
    route = table.pick_route("T")
    assert route is not None
    assert route.queue_datas == (QueueData("broker-a", 4, 4, 6, 0),)
    assert [(b.cluster, b.broker_name, b.broker_addrs) for b in route.broker_datas] == [
        ("DefaultCluster", "broker-a", {0: "10.0.0.1:10911"})
    ]


def test_unknown_topic_has_no_route() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master())
    assert table.pick_route("nope") is None


def test_slave_registration_adds_its_address_but_never_its_topics() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master())
    slave = master(addr="10.0.0.2:10911", broker_id=1, topics={"OnlyOnSlave": TopicConfig("OnlyOnSlave")})
    result = table.register_broker(slave)
    assert result.master_addr == "10.0.0.1:10911"
    assert result.ha_server_addr == "10.0.0.1:10912"
    assert table.pick_route("OnlyOnSlave") is None
    route = table.pick_route("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}


def test_slave_without_a_registered_master_gets_no_master_address() -> None:
    table = RouteTable(clock=FakeClock())
    result = table.register_broker(master(addr="10.0.0.2:10911", broker_id=1))
    assert result.master_addr is None and result.ha_server_addr is None


def test_topics_are_updated_only_when_the_data_version_changes() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(topics={"T": TopicConfig("T", 4, 4)}, version=DataVersion(1, 1)))
    table.register_broker(master(topics={"T": TopicConfig("T", 8, 8)}, version=DataVersion(1, 1)))
    route = table.pick_route("T")
    assert route is not None and route.queue_datas[0].write_queue_nums == 4
    table.register_broker(master(topics={"T": TopicConfig("T", 8, 8)}, version=DataVersion(2, 2)))
    route = table.pick_route("T")
    assert route is not None and route.queue_datas[0].write_queue_nums == 8


def test_promoted_slave_keeps_one_id_per_address() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(addr="10.0.0.2:10911", broker_id=1))
    table.register_broker(master(addr="10.0.0.2:10911", broker_id=0))
    info = table.cluster_info()
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.2:10911"}


def test_unregistering_the_last_address_removes_broker_cluster_and_topics() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master())
    table.register_broker(master(name="broker-b", addr="10.0.0.3:10911", topics={"U": TopicConfig("U")}))
    table.unregister_broker("DefaultCluster", "10.0.0.1:10911", "broker-a", 0)
    assert table.pick_route("T") is None
    assert table.all_topics() == ["U"]
    assert table.cluster_info().cluster_addr_table == {"DefaultCluster": ("broker-b",)}
    table.unregister_broker("DefaultCluster", "10.0.0.3:10911", "broker-b", 0)
    assert table.cluster_info().cluster_addr_table == {}
    assert table.all_topics() == []


def test_brokers_silent_past_the_expiry_are_removed_by_a_scan() -> None:
    clock = FakeClock()
    table = RouteTable(clock=clock, default_expiry_ms=1000)
    table.register_broker(master(connection_id=7))
    clock.now += 1000
    assert table.scan_not_active_brokers() == []
    clock.now += 1
    assert table.scan_not_active_brokers() == [("10.0.0.1:10911", 7)]
    assert table.pick_route("T") is None
    assert table.cluster_info().broker_addr_table == {}


def test_a_heartbeat_keeps_the_broker_alive() -> None:
    clock = FakeClock()
    table = RouteTable(clock=clock, default_expiry_ms=1000)
    table.register_broker(master())
    clock.now += 900
    table.register_broker(master())
    clock.now += 900
    assert table.scan_not_active_brokers() == []
    assert table.pick_route("T") is not None


def test_a_broker_sent_timeout_overrides_the_default_expiry() -> None:
    clock = FakeClock()
    table = RouteTable(clock=clock, default_expiry_ms=100_000)
    table.register_broker(master(timeout_ms=50))
    clock.now += 51
    assert [addr for addr, _ in table.scan_not_active_brokers()] == ["10.0.0.1:10911"]


def test_closing_a_connection_removes_the_brokers_registered_over_it() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(connection_id=1))
    table.register_broker(master(name="broker-b", addr="10.0.0.3:10911", connection_id=2))
    assert table.on_connection_closed(1) == ["10.0.0.1:10911"]
    route = table.pick_route("T")
    assert route is not None and [b.broker_name for b in route.broker_datas] == ["broker-b"]
    assert table.on_connection_closed(99) == []


def test_a_slave_connection_closing_leaves_the_master_and_topics() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(connection_id=1))
    table.register_broker(master(addr="10.0.0.2:10911", broker_id=1, connection_id=2))
    table.on_connection_closed(2)
    route = table.pick_route("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911"}


def test_route_data_is_a_copy_that_later_changes_do_not_touch() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master())
    route = table.pick_route("T")
    table.register_broker(master(addr="10.0.0.2:10911", broker_id=1))
    assert route is not None and route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911"}


def test_topic_lists_by_cluster_and_system_topics() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(topics={"T": TopicConfig("T"), "A": TopicConfig("A")}))
    table.register_broker(
        master(name="broker-b", addr="10.0.0.3:10911", cluster="Other", topics={"B": TopicConfig("B")})
    )
    assert sorted(table.all_topics()) == ["A", "B", "T"]
    assert sorted(table.topics_by_cluster("DefaultCluster")) == ["A", "T"]
    assert table.topics_by_cluster("Other") == ["B"]
    assert table.topics_by_cluster("Missing") == []
    topics, addr = table.system_topics()
    assert sorted(topics) == ["DefaultCluster", "Other", "broker-a", "broker-b"]
    assert addr in ("10.0.0.1:10911", "10.0.0.3:10911")


def test_unit_topic_lists_follow_the_topic_sys_flag() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(
        master(
            topics={
                "Plain": TopicConfig("Plain"),
                "Unit": TopicConfig("Unit", topic_sys_flag=1),
                "UnitSub": TopicConfig("UnitSub", topic_sys_flag=2),
                "Both": TopicConfig("Both", topic_sys_flag=3),
            }
        )
    )
    assert sorted(table.unit_topics()) == ["Both", "Unit"]
    assert sorted(table.has_unit_sub_topics()) == ["Both", "UnitSub"]
    assert table.has_unit_sub_ununit_topics() == ["UnitSub"]


def test_ordinary_topics_give_empty_unit_lists() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master())
    assert table.unit_topics() == table.has_unit_sub_topics() == table.has_unit_sub_ununit_topics() == []


def test_wiping_and_adding_write_permission_counts_topics() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(topics={"T": TopicConfig("T", perm=6), "R": TopicConfig("R", perm=4)}))
    assert table.wipe_write_perm("broker-a") == 2
    route = table.pick_route("T")
    assert route is not None and route.queue_datas[0].perm == 4
    assert table.add_write_perm("broker-a") == 2
    route = table.pick_route("R")
    assert route is not None and route.queue_datas[0].perm == 6
    assert table.wipe_write_perm("unknown") == 0


def test_deleting_a_topic_everywhere_or_in_one_cluster() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(topics={"T": TopicConfig("T")}))
    table.register_broker(master(name="broker-b", addr="10.0.0.3:10911", cluster="Other", topics={"T": TopicConfig("T")}))
    table.delete_topic("T", "Other")
    route = table.pick_route("T")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-a"]
    table.delete_topic("T")
    assert table.pick_route("T") is None
    table.delete_topic("T")  # deleting twice is harmless


def test_data_version_query_and_touch() -> None:
    clock = FakeClock()
    table = RouteTable(clock=clock, default_expiry_ms=1000)
    assert table.data_version_of("10.0.0.1:10911") is None
    table.register_broker(master(version=DataVersion(5, 3)))
    assert table.data_version_of("10.0.0.1:10911") == DataVersion(5, 3)
    assert not table.is_data_version_changed("10.0.0.1:10911", DataVersion(5, 3))
    assert table.is_data_version_changed("10.0.0.1:10911", DataVersion(5, 4))
    clock.now += 900
    table.touch("10.0.0.1:10911")
    clock.now += 900
    assert table.scan_not_active_brokers() == []


def test_registration_without_a_body_registers_the_broker_without_topics() -> None:
    table = RouteTable(clock=FakeClock())
    reg = BrokerRegistration("C", "10.0.0.1:10911", "b", 0)
    table.register_broker(reg)
    assert table.all_topics() == []
    assert table.cluster_info().cluster_addr_table == {"C": ("b",)}
    assert table.data_version_of("10.0.0.1:10911") == DataVersion(0, 0)


def test_an_address_registered_under_a_new_broker_name_leaves_the_old_name() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(name="old-name"))
    table.register_broker(master(name="new-name", topics={"U": TopicConfig("U")}))
    info = table.cluster_info()
    assert set(info.broker_addr_table) == {"new-name"}
    assert table.pick_route("T") is None
    assert table.pick_route("U") is not None


def test_a_master_moving_to_a_new_address_retires_the_old_one() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(addr="10.0.0.1:10911"))
    table.register_broker(master(addr="10.0.0.9:10911"))
    assert table.live_info("10.0.0.1:10911") is None
    route = table.pick_route("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: "10.0.0.9:10911"}


def test_a_stale_master_epoch_is_refused_and_the_route_keeps_the_newer_master() -> None:
    table = RouteTable(clock=FakeClock())
    old, new = "10.0.0.1:10911", "10.0.0.2:10911"
    table.register_broker(master(addr=old, version=DataVersion(1, 1, 1)))
    # The new master of epoch 2 takes brokerId 0 over.
    assert table.register_broker(master(addr=new, version=DataVersion(2, 1, 2))).newer_master is None
    # The deposed master resumes and registers with its old epoch: refused.
    result = table.register_broker(master(addr=old, version=DataVersion(3, 2, 1)))
    assert result.newer_master == (new, 2)
    route = table.pick_route("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: new}
    assert table.live_info(old) is None and table.broker_addrs() == [new]
    # Back as a slave of the new epoch it registers as usual and learns its master.
    assert table.register_broker(master(addr=old, broker_id=2, version=DataVersion(3, 2, 2))).master_addr == new
    # A master of a still newer epoch replaces the epoch-2 one.
    assert table.register_broker(master(addr=old, version=DataVersion(4, 3, 3))).newer_master is None
    route = table.pick_route("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: old}


def test_masters_without_a_state_version_replace_each_other_as_in_rocketmq_4() -> None:
    table = RouteTable(clock=FakeClock())
    table.register_broker(master(addr="10.0.0.1:10911"))
    assert table.register_broker(master(addr="10.0.0.2:10911")).newer_master is None
    route = table.pick_route("T")
    assert route is not None and route.broker_datas[0].broker_addrs == {0: "10.0.0.2:10911"}


def test_an_equal_epoch_or_an_expired_holder_does_not_refuse() -> None:
    clock = FakeClock()
    table = RouteTable(clock=clock, default_expiry_ms=1000)
    table.register_broker(master(addr="10.0.0.1:10911", version=DataVersion(1, 1, 2)))
    assert table.register_broker(master(addr="10.0.0.2:10911", version=DataVersion(1, 1, 2))).newer_master is None
    clock.now += 2000
    table.scan_not_active_brokers()
    assert table.register_broker(master(addr="10.0.0.3:10911", version=DataVersion(1, 1, 1))).newer_master is None
