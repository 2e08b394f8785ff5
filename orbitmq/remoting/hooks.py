"""RPC hooks: code that sees (and may change) every request a `RemotingClient` sends.

The counterpart of RocketMQ's `RPCHook`: `do_before_request(addr, request)`
runs before a request leaves (it may add header fields, as ACL signing does)
and `do_after_response(addr, request, response)` after its response came
(not for oneway requests, which have none). An exception raised by a hook
fails that request, as in RocketMQ.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from orbitmq.remoting.command import RemotingCommand


@runtime_checkable
class RPCHook(Protocol):
    """What a client runs around every request it sends (RocketMQ's RPCHook)."""

    def do_before_request(self, remote_addr: str, request: RemotingCommand) -> None: ...

    def do_after_response(self, remote_addr: str, request: RemotingCommand, response: RemotingCommand) -> None: ...


__all__ = ["RPCHook"]
