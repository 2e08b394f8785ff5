"""The client's answers to forwarded admin requests, without sockets: refusals and result codes."""

from __future__ import annotations

from typing import Any

from orbitmq.client.results import ConsumeOrderlyResult, ConsumeResult
from orbitmq.client.running_info import classify, on_consume_message_directly, on_get_consumer_running_info
from orbitmq.remoting.codes import RequestCode, ResponseCode
from orbitmq.remoting.command import RemotingCommand

PEER: Any = None


async def test_running_info_for_a_group_this_client_does_not_run_is_a_system_error() -> None:
    request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "G", "clientId": "c"})
    resp = await on_get_consumer_running_info({}, ["127.0.0.1:9876"], request, PEER)
    assert resp.code == ResponseCode.SYSTEM_ERROR
    assert resp.remark == "The Consumer Group <G> not exist in this consumer"


async def test_running_info_request_without_a_group_names_the_missing_field() -> None:
    request = RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, {"clientId": "c"})
    resp = await on_get_consumer_running_info({}, [], request, PEER)
    assert resp.code == ResponseCode.SYSTEM_ERROR and "consumerGroup" in (resp.remark or "")


async def test_direct_consumption_of_an_unreadable_or_empty_body_is_refused() -> None:
    garbage = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": "G"}, b"\x00\x00\x00\x10xx")
    empty = RemotingCommand.request(RequestCode.CONSUME_MESSAGE_DIRECTLY, {"consumerGroup": "G"})
    for request in (garbage, empty):
        resp = await on_consume_message_directly({}, request, PEER)
        assert resp.code == ResponseCode.SYSTEM_ERROR and resp.remark


def test_listener_results_map_to_java_direct_consumption_codes() -> None:
    assert classify(ConsumeResult.CONSUME_SUCCESS, orderly=False) == "CR_SUCCESS"
    assert classify("RECONSUME_LATER", orderly=False) == "CR_LATER"
    assert classify(None, orderly=False) == "CR_RETURN_NULL"
    assert classify(ConsumeOrderlyResult.SUCCESS, orderly=True) == "CR_SUCCESS"
    assert classify(ConsumeOrderlyResult.SUSPEND_CURRENT_QUEUE_A_MOMENT, orderly=True) == "CR_LATER"
    assert classify("COMMIT", orderly=True) == "CR_COMMIT" and classify("ROLLBACK", orderly=True) == "CR_ROLLBACK"
