"""One real `orbitmq dev` (NameServer + broker) per test module, stopped by PID.

Transactions are checked every half second and a half message after one, so
the broker's CHECK_TRANSACTION_STATE arrives in test time; SQL92 filtering is
enabled so a Java consumer's CHECK_CLIENT_CONFIG and SQL92 pulls can be replayed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.dev import DevServer, running_dev

BROKER_CONF = "transactionCheckInterval=500\ntransactionTimeOut=1000\nenablePropertyFilter=true\n"


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevServer]:
    with running_dev(tmp_path_factory.mktemp("conformance"), BROKER_CONF) as server:
        yield server
