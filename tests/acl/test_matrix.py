"""The ACL rule table: every request code has a rule, and the matrix of every code x account kind.

The expectations below are written out code by code (not derived from the
table under test), so a code added to `RequestCode` without a rule, or a rule
that changes, fails here until someone decides what it should be.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from orbitmq.broker.acl.errors import AclError
from orbitmq.broker.acl.resources import RULES, Served, rule_for
from orbitmq.broker.acl.validator import AclValidator
from orbitmq.client.acl import AclCredentials, sign_request
from orbitmq.common.message import MessageExt
from orbitmq.common.msgid import create_offset_msg_id
from orbitmq.remoting.codes import RequestCode
from orbitmq.remoting.command import RemotingCommand

C = RequestCode

#: Admin accounts only (ACL 2.0: CREATE, DELETE, cluster UPDATE, secrets), and codes no server serves.
ADMIN_ONLY = {
    C.UPDATE_AND_CREATE_TOPIC, C.UPDATE_BROKER_CONFIG, C.GET_BROKER_CONFIG, C.TRIGGER_DELETE_FILES,
    C.UPDATE_AND_CREATE_ACL_CONFIG, C.DELETE_ACL_CONFIG, C.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    C.GET_BROKER_CLUSTER_ACL_CONFIG, C.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, C.DELETE_SUBSCRIPTIONGROUP,
    C.SUSPEND_CONSUMER, C.RESUME_CONSUMER, C.ADJUST_CONSUMER_THREAD_POOL, C.DELETE_TOPIC_IN_BROKER,
    C.REGISTER_FILTER_SERVER, C.REGISTER_MESSAGE_FILTER_CLASS, C.CLEAN_EXPIRED_CONSUMEQUEUE,
    C.CLEAN_UNUSED_TOPIC, C.RESUME_CHECK_HALF_MESSAGE, C.DELETE_EXPIRED_COMMITLOG,
    # NameServer writes
    C.PUT_KV_CONFIG, C.DELETE_KV_CONFIG, C.WIPE_WRITE_PERM_OF_BROKER, C.DELETE_TOPIC_IN_NAMESRV,
    C.UPDATE_NAMESRV_CONFIG, C.ADD_WRITE_PERM_OF_BROKER, C.REGISTER_BROKER, C.UNREGISTER_BROKER,
    # broker -> client
    C.CHECK_TRANSACTION_STATE, C.NOTIFY_CONSUMER_IDS_CHANGED, C.RESET_CONSUMER_CLIENT_OFFSET,
    C.GET_CONSUMER_STATUS_FROM_CLIENT, C.PUSH_REPLY_MESSAGE_TO_CLIENT,
}
#: Any authenticated account: cluster-wide reads (RocketMQ 4.x checks nothing more for them).
AUTHENTICATED = {
    C.QUERY_BROKER_OFFSET, C.GET_ALL_TOPIC_CONFIG, C.GET_TOPIC_CONFIG_LIST, C.GET_TOPIC_NAME_LIST,
    C.GET_BROKER_RUNTIME_INFO, C.GET_ALL_CONSUMER_OFFSET, C.GET_ALL_DELAY_OFFSET, C.GET_BROKER_CLUSTER_ACL_INFO,
    C.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, C.GET_PRODUCER_CONNECTION_LIST, C.GET_SYSTEM_TOPIC_LIST_FROM_BROKER,
    C.VIEW_BROKER_STATS_DATA, C.GET_BROKER_CONSUME_STATS, C.GET_ALL_PRODUCER_INFO,
    # NameServer reads (open there; on a broker they would need a signature like these)
    C.GET_KV_CONFIG, C.GET_ROUTEINFO_BY_TOPIC, C.GET_BROKER_CLUSTER_INFO, C.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
    C.GET_KVLIST_BY_NAMESPACE, C.GET_TOPICS_BY_CLUSTER, C.GET_SYSTEM_TOPIC_LIST_FROM_NS, C.GET_UNIT_TOPIC_LIST,
    C.GET_HAS_UNIT_SUB_TOPIC_LIST, C.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, C.GET_NAMESRV_CONFIG, C.QUERY_DATA_VERSION,
}
#: Rights on the topics and groups the request (or the message it names) touches.
RESOURCE_CHECKED = {
    C.SEND_MESSAGE, C.SEND_MESSAGE_V2, C.SEND_BATCH_MESSAGE, C.SEND_REPLY_MESSAGE, C.SEND_REPLY_MESSAGE_V2,
    C.END_TRANSACTION, C.HEART_BEAT, C.UNREGISTER_CLIENT, C.CHECK_CLIENT_CONFIG, C.PULL_MESSAGE, C.QUERY_MESSAGE,
    C.QUERY_CONSUMER_OFFSET, C.UPDATE_CONSUMER_OFFSET, C.SEARCH_OFFSET_BY_TIMESTAMP, C.GET_MAX_OFFSET,
    C.GET_MIN_OFFSET, C.GET_EARLIEST_MSG_STORETIME, C.VIEW_MESSAGE_BY_ID, C.CONSUMER_SEND_MSG_BACK,
    C.GET_CONSUMER_LIST_BY_GROUP, C.LOCK_BATCH_MQ, C.UNLOCK_BATCH_MQ, C.GET_TOPIC_STATS_INFO,
    C.GET_CONSUMER_CONNECTION_LIST, C.GET_CONSUME_STATS, C.RESET_CONSUMER_OFFSET_IN_CONSUMER,
    C.RESET_CONSUMER_OFFSET_IN_BROKER, C.WHO_CONSUME_THE_MESSAGE, C.INVOKE_BROKER_TO_RESET_OFFSET,
    C.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, C.QUERY_TOPIC_CONSUME_BY_WHO, C.QUERY_CONSUME_TIME_SPAN,
    C.GET_CONSUMER_RUNNING_INFO, C.QUERY_CORRECTION_OFFSET, C.CONSUME_MESSAGE_DIRECTLY, C.CLONE_GROUP_OFFSET,
    C.QUERY_CONSUME_QUEUE, C.RECALL_MESSAGE, C.LIST_TIMER_MESSAGES, C.CANCEL_TIMER_MESSAGE,
    C.RESCHEDULE_TIMER_MESSAGE, C.POP_MESSAGE, C.PEEK_MESSAGE, C.NOTIFICATION, C.POLLING_INFO, C.ACK_MESSAGE,
    C.CHANGE_MESSAGE_INVISIBLETIME, C.BATCH_ACK_MESSAGE,
}


def test_every_request_code_has_a_rule_and_one_expected_kind() -> None:
    codes = set(RequestCode)
    assert codes - set(RULES) == set(), "request codes without an ACL rule"
    assert ADMIN_ONLY | AUTHENTICATED | RESOURCE_CHECKED == codes, "codes missing from this test's matrix"
    assert not (ADMIN_ONLY & AUTHENTICATED) and not (ADMIN_ONLY & RESOURCE_CHECKED)
    assert not (AUTHENTICATED & RESOURCE_CHECKED)
    for code in codes:
        assert rule_for(code).admin == (code in ADMIN_ONLY), code
        assert rule_for(code).acl2, code


def test_a_code_unknown_to_the_table_needs_an_admin_account() -> None:
    assert rule_for(9999).admin
    assert all(rule.served is Served.CLIENT for code, rule in RULES.items() if code in {
        C.CHECK_TRANSACTION_STATE, C.NOTIFY_CONSUMER_IDS_CHANGED, C.PUSH_REPLY_MESSAGE_TO_CLIENT})


ACL_YML = textwrap.dedent("""\
    globalWhiteRemoteAddresses: [10.0.0.7, 127.0.0.1]
    accounts:
      - accessKey: adminKey01
        secretKey: adminSecret01
        admin: true
      - accessKey: normalKey01
        secretKey: normalSecret01
        defaultTopicPerm: DENY
        defaultGroupPerm: DENY
        topicPerms: [T=PUB|SUB]
        groupPerms: [G=SUB]
      - accessKey: denyKey0001
        secretKey: denySecret01
        defaultTopicPerm: DENY
        defaultGroupPerm: DENY
        topicPerms: [T=DENY]
        groupPerms: [G=DENY]
    """)
ADMIN = AclCredentials("adminKey01", "adminSecret01")
NORMAL = AclCredentials("normalKey01", "normalSecret01")
DENIED = AclCredentials("denyKey0001", "denySecret01")
UNKNOWN = AclCredentials("nobodyKey01", "nobodySecret")

#: Every field a rule reads, naming topic T and group G.
FIELDS = {
    "topic": "T", "b": "T", "consumerGroup": "G", "group": "G", "srcGroup": "G", "destGroup": "G",
    "filterGroups": "G", "compareGroup": "G", "offset": "100", "commitLogOffset": "100",
    "msgId": create_offset_msg_id("127.0.0.1:10911", 100),
}
HEARTBEAT = (b'{"clientID":"c","consumerDataSet":[{"groupName":"G","subscriptionDataSet":[{"topic":"T"}]}],'
             b'"producerDataSet":[]}')
BODIES = {
    C.HEART_BEAT: HEARTBEAT,
    C.LOCK_BATCH_MQ: b'{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":0}]}',
    C.UNLOCK_BATCH_MQ: b'{"consumerGroup":"G","clientId":"c","mqSet":[{"topic":"T","brokerName":"b","queueId":0}]}',
    C.CHECK_CLIENT_CONFIG: b'{"clientId":"c","group":"G","subscriptionData":{"topic":"T"}}',
    C.BATCH_ACK_MESSAGE: b'{"acks":[{"b":"AQ==","c":"G","it":60000,"pt":1,"q":0,"r":"0","rq":0,"so":100,"t":"T"}],'
                         b'"brokerName":"b"}',
}


class Stored:
    """The message at offset 100 is in topic T; group G subscribes to T."""

    def message_at(self, commit_log_offset: int) -> MessageExt | None:
        return MessageExt(topic="T") if commit_log_offset == 100 else None

    def subscribes(self, group: str, topic: str) -> bool:
        return (group, topic) == ("G", "T")


def validator(tmp_path: Path, text: str = ACL_YML) -> AclValidator:
    path = tmp_path / "plain_acl.yml"
    path.write_text(text)
    v = AclValidator(str(path))
    v.load()
    v.stored = Stored()
    return v


def allowed(v: AclValidator, code: int, creds: AclCredentials | None, host: str = "127.0.0.1") -> bool:
    cmd = RemotingCommand.request(code, dict(FIELDS), BODIES.get(C(code)))
    if creds is not None:
        sign_request(cmd, creds)
    try:
        v.check(cmd, host)
    except AclError:
        return False
    return True


@pytest.mark.parametrize("code", sorted(RequestCode))
def test_matrix_of_every_code_and_account_kind(tmp_path: Path, code: RequestCode) -> None:
    v = validator(tmp_path)
    assert allowed(v, code, ADMIN)
    assert allowed(v, code, NORMAL) == (code not in ADMIN_ONLY)
    assert allowed(v, code, DENIED) == (code in AUTHENTICATED)
    assert not allowed(v, code, UNKNOWN)
    assert not allowed(v, code, None)
    # A whitelisted address is no account: unsigned, it is refused; signed from elsewhere, too.
    assert not allowed(v, code, None, host="10.0.0.7")
    assert not allowed(v, code, ADMIN, host="10.9.9.9")
    legacy = validator(tmp_path, "whiteAddressSkipsSignature: true\n" + ACL_YML)
    assert allowed(legacy, code, None, host="10.0.0.7")
    assert not allowed(legacy, code, None, host="10.9.9.9")


def test_stored_message_checks_follow_the_messages_topic(tmp_path: Path) -> None:
    v = validator(tmp_path)
    # The message at offset 200 does not exist; at 100 it is in T. NORMAL may read T, DENIED may not.
    for code in (C.CONSUMER_SEND_MSG_BACK, C.CONSUME_MESSAGE_DIRECTLY, C.END_TRANSACTION):
        assert allowed(v, code, NORMAL)

    class Elsewhere(Stored):
        def message_at(self, commit_log_offset: int) -> MessageExt | None:
            return MessageExt(topic="Secret")

    v.stored = Elsewhere()
    for code in (C.CONSUMER_SEND_MSG_BACK, C.CONSUME_MESSAGE_DIRECTLY, C.END_TRANSACTION):
        assert not allowed(v, code, NORMAL), code
        assert allowed(v, code, ADMIN), code

    class HalfOfT(Stored):
        def message_at(self, commit_log_offset: int) -> MessageExt | None:
            return MessageExt(topic="RMQ_SYS_TRANS_HALF_TOPIC", properties={"REAL_TOPIC": "T"})

    v.stored = HalfOfT()
    assert allowed(v, C.END_TRANSACTION, NORMAL)


def test_an_accounts_white_remote_address_restricts_where_it_may_be_used_from(tmp_path: Path) -> None:
    text = ACL_YML.replace("globalWhiteRemoteAddresses: [10.0.0.7, 127.0.0.1]\n", "").replace(
        "    topicPerms: [T=PUB|SUB]\n", "    topicPerms: [T=PUB|SUB]\n    whiteRemoteAddress: 10.1.1.*\n")
    assert "10.1.1.*" in text
    v = validator(tmp_path, text)
    assert allowed(v, C.PULL_MESSAGE, NORMAL, host="10.1.1.5")
    with pytest.raises(AclError, match="whiteRemoteAddress") as refused:
        v.check(sign_request(RemotingCommand.request(C.PULL_MESSAGE, dict(FIELDS)), NORMAL), "127.0.0.1")
    assert refused.value.code == 16
    # Signed with a wrong secret from the right address: still refused (4.x skipped the signature).
    wrong = AclCredentials(NORMAL.access_key, "wrongSecret")
    assert not allowed(v, C.PULL_MESSAGE, wrong, host="10.1.1.5")
    legacy = validator(tmp_path, "whiteAddressSkipsSignature: true\n" + text)
    assert allowed(legacy, C.PULL_MESSAGE, wrong, host="10.1.1.5")
    assert not allowed(legacy, C.UPDATE_AND_CREATE_TOPIC, wrong, host="10.1.1.5")  # rights still apply
