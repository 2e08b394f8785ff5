"""Fixtures for the transaction, request-reply, trace and example tests: one real `orbitmq dev`.

The broker checks transactions every half second and a half message after
one second, so the check paths run in test time; the trace topic exists
(traceTopicEnable) and the delay table is short for the order-timeout example.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.dev import DevServer, running_dev, unique_names

BROKER_CONF = """\
transactionCheckInterval=500
transactionTimeOut=1000
transactionCheckMax=3
traceTopicEnable=true
messageDelayLevel=1s 2s 3s
"""


@pytest.fixture(scope="session")
def dev_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev(tmp_path_factory.mktemp("orbitmq-tx"), BROKER_CONF) as dev:
        yield dev


@pytest.fixture
def namesrv(dev_server: DevServer) -> str:
    return dev_server.namesrv


@pytest.fixture
def names() -> tuple[str, str, str]:
    """(topic, producer group, consumer group) unique to this test."""
    return unique_names("TX")
