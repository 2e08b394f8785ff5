"""One `orbitmq dev` process for the end-to-end feature tests, with a short delay table and SQL92 on.

Tests share the server but never names (see `names`).
"""

from tests.broker_features.inproc import SHORT_LEVELS
from tests.support.dev import session_dev_fixtures

# Small files: CommitLog files are reserved whole when created, and pytest keeps the last runs' folders.
BROKER_CONF = (
    f"messageDelayLevel={SHORT_LEVELS}\nenablePropertyFilter=true\n"
    "mappedFileSizeCommitLog=16777216\nmappedFileSizeConsumeQueue=120000\n"
)

dev_server, namesrv, names = session_dev_fixtures(BROKER_CONF, "F")
