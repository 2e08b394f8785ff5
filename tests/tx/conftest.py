"""Fixtures for the transaction, request-reply, trace and example tests: one real `orbitmq dev`.

The broker checks transactions every half second and a half message after
one second, so the check paths run in test time; the trace topic exists
(traceTopicEnable) and the delay table is short for the order-timeout example.
"""

from tests.support.dev import session_dev_fixtures

BROKER_CONF = """\
transactionCheckInterval=500
transactionTimeOut=1000
transactionCheckMax=3
traceTopicEnable=true
messageDelayLevel=1s 2s 3s
"""

dev_server, namesrv, names = session_dev_fixtures(BROKER_CONF, "TX")
