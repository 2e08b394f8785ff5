"""Fixtures for end-to-end client tests: one real `orbitmq dev` process per test session.

Tests share the server but never names: each test uses its own topics and
groups (see `names`), so they stay independent.
"""

from tests.support.dev import session_dev_fixtures

dev_server, namesrv, names = session_dev_fixtures()
