"""The catalogue of RocketMQ 4.9's config keys agrees with what the config classes read."""

from __future__ import annotations

import dataclasses

import pytest

from orbitmq.broker import config as broker_config
from orbitmq.common import keycatalog
from orbitmq.common.keycatalog import BROKER_KEYS, CATALOGUE, NAMESRV_KEYS, suggest
from orbitmq.namesrv import config as namesrv_config
from orbitmq.store import config as store_config
from orbitmq.store.config import StoreConfig


def _broker_applies(key: str) -> bool:
    return key in broker_config._KEY_TO_FIELD or store_config.field_of(key) is not None


@pytest.mark.parametrize("key", sorted(BROKER_KEYS))
def test_a_broker_key_is_applied_exactly_when_the_catalogue_says_so(key: str) -> None:
    spec = BROKER_KEYS[key]
    assert _broker_applies(key) == spec.applied, (
        f"{key}: the catalogue says {'applied' if spec.applied else 'ignored'} but the broker's config "
        "classes disagree; clear or add the reason in common/keycatalog.py"
    )


@pytest.mark.parametrize("key", sorted(NAMESRV_KEYS))
def test_a_namesrv_key_is_applied_exactly_when_the_catalogue_says_so(key: str) -> None:
    assert (key in namesrv_config.KNOWN_KEYS) == NAMESRV_KEYS[key].applied, key


def test_the_catalogue_holds_every_setter_of_rocketmq_4_9_classes() -> None:
    """Counts of String/number/boolean setters in RocketMQ 4.9.7's classes (MixAll.properties2Object)."""
    counts = {source: sum(1 for s in CATALOGUE if s.source == source) for source in
              (keycatalog.BROKER, keycatalog.STORE, keycatalog.NETTY_SERVER, keycatalog.NETTY_CLIENT, keycatalog.NAMESRV)}
    assert counts == {"BrokerConfig": 80, "MessageStoreConfig": 78, "NettyServerConfig": 14,
                      "NettyClientConfig": 14, "NamesrvConfig": 6}
    assert len({(s.source, s.key) for s in CATALOGUE}) == len(CATALOGUE), "a key listed twice"
    assert {s.java_type for s in CATALOGUE} <= {"String", "int", "long", "boolean", "double", "float"}


def test_issue_keys_are_all_known() -> None:
    for key in ("transientStorePoolEnable", "useReentrantLockWhenPutMessage", "transferMsgByHeap",
                "sendMessageThreadPoolNums", "pullMessageThreadPoolNums", "serverWorkerThreads",
                "storePathIndex", "storePathConsumeQueue", "flushCommitLogTimed", "enableDLegerCommitLog"):
        assert key in BROKER_KEYS


def test_every_ignored_key_says_why() -> None:
    for spec in CATALOGUE:
        assert spec.ignored == "" or len(spec.ignored) > 10, spec.key


def test_applied_rocketmq_defaults_match_orbitmq_defaults_where_they_are_the_same_setting() -> None:
    """Where OrbitMQ applies a key, its default is RocketMQ's (the listed exceptions say why not)."""
    shown = broker_config.BrokerConfig(store=StoreConfig()).to_properties()
    host_dependent = {"brokerName", "brokerIP1", "brokerIP2", "namesrvAddr", "storePathRootDir", "haListenPort",
                      "listenPort", "storePathCommitLog"}
    for key, spec in BROKER_KEYS.items():
        if spec.applied and key not in host_dependent and spec.source != keycatalog.ORBITMQ:
            assert shown[key] == spec.default, key


def test_suggestions_name_the_nearest_key() -> None:
    known = list(BROKER_KEYS)
    assert suggest("transactionTimeout", known) == " (did you mean transactionTimeOut?)"
    assert suggest("fileReserveTime", known) == " (did you mean fileReservedTime?)"
    assert suggest("zzzz", known) == ""


def test_every_store_field_has_a_key() -> None:
    keys = [store_config.key_of(f.name) for f in dataclasses.fields(StoreConfig)]
    assert len(keys) == len(set(keys))
