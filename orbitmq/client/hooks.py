"""Send and consume hooks: code that runs around every send and every listener call.

The counterparts of RocketMQ's `SendMessageHook` and `ConsumeMessageHook`
(registered with `Producer.register_send_message_hook` and
`PushConsumer.register_consume_message_hook`), plus `RPCHook` (remoting/hooks.py,
the `rpc_hook=` client option) for every request a client sends.

* A send hook's `send_message_before(context)` runs before each send request
  (each attempt, as Java's sendKernelImpl calls it), `send_message_after(context)`
  after it, with `context.send_result` set, or `context.exception` when the
  attempt failed. A producer with send hooks sends each message in a request of
  its own (no natural batching), so a context describes one message, or one
  batch the caller made.
* A consume hook's `consume_message_before(context)` runs before the listener
  is called, `consume_message_after(context)` after, with `status` (the
  listener's answer; RECONSUME_LATER / SUSPEND_CURRENT_QUEUE_A_MOMENT when it
  raised, timed out or returned nothing), `success` and
  `props["ConsumeContextType"]` (SUCCESS, TIME_OUT, EXCEPTION, RETURNNULL, FAILED).
* An exception in a send or consume hook is logged and ignored, as in Java;
  hooks are called on the client's event loop and must not block.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from orbitmq.client.queue import MessageQueue
from orbitmq.common.message import Message, MessageExt
from orbitmq.remoting.hooks import RPCHook

log = logging.getLogger(__name__)

#: The key of `ConsumeMessageContext.props` that says how a consumption ended (MixAll.CONSUME_CONTEXT_TYPE).
CONSUME_CONTEXT_TYPE = "ConsumeContextType"


@dataclass
class SendMessageContext:
    """One send request, as Java's SendMessageContext describes it."""

    producer_group: str
    #: The message sent, or the batch's messages.
    message: Message | Sequence[Message]
    mq: MessageQueue
    broker_addr: str
    #: "SYNC" or "ONEWAY" (RocketMQ's CommunicationMode names).
    communication_mode: str = "SYNC"
    #: "Normal_Msg", "Trans_Msg_Half" or "Delay_Msg" (RocketMQ's MessageType names).
    msg_type: str = "Normal_Msg"
    send_result: Any = None
    exception: BaseException | None = None
    #: Free for hooks to pass values from `before` to `after`.
    props: dict[str, str] = field(default_factory=dict)


@dataclass
class ConsumeMessageContext:
    """One listener call, as Java's ConsumeMessageContext describes it."""

    consumer_group: str
    msg_list: list[MessageExt]
    mq: MessageQueue | None
    success: bool = False
    #: The listener's answer as text (ConsumeConcurrentlyStatus / ConsumeOrderlyStatus names).
    status: str = ""
    #: Free for hooks; `props[CONSUME_CONTEXT_TYPE]` tells how the call ended.
    props: dict[str, str] = field(default_factory=dict)


@runtime_checkable
class SendMessageHook(Protocol):
    """RocketMQ's SendMessageHook."""

    def hook_name(self) -> str: ...

    def send_message_before(self, context: SendMessageContext) -> None: ...

    def send_message_after(self, context: SendMessageContext) -> None: ...


@runtime_checkable
class ConsumeMessageHook(Protocol):
    """RocketMQ's ConsumeMessageHook."""

    def hook_name(self) -> str: ...

    def consume_message_before(self, context: ConsumeMessageContext) -> None: ...

    def consume_message_after(self, context: ConsumeMessageContext) -> None: ...


def _name(hook: Any) -> str:
    try:
        return str(hook.hook_name())
    except Exception:  # noqa: BLE001 - only used to name a failing hook in the log
        return type(hook).__name__


H = TypeVar("H")
C = TypeVar("C")


def _call_each(hooks: Sequence[H], method: Callable[[H], Callable[[C], None]], context: C, what: str) -> None:
    for hook in hooks:
        try:
            method(hook)(context)
        except Exception:  # as Java: a hook never fails the send or the consumption
            log.warning("%s hook %s failed", what, _name(hook), exc_info=True)


def run_send_hooks(hooks: Sequence[SendMessageHook], before: bool, context: SendMessageContext) -> None:
    """Call each hook's before (or after) method; a failing hook is logged, the send goes on."""
    if before:
        _call_each(hooks, lambda hook: hook.send_message_before, context, "send message")
    else:
        _call_each(hooks, lambda hook: hook.send_message_after, context, "send message")


def run_consume_hooks(hooks: Sequence[ConsumeMessageHook], before: bool, context: ConsumeMessageContext) -> None:
    """Call each hook's before (or after) method; a failing hook is logged, consumption goes on."""
    if before:
        _call_each(hooks, lambda hook: hook.consume_message_before, context, "consume message")
    else:
        _call_each(hooks, lambda hook: hook.consume_message_after, context, "consume message")


__all__ = [
    "CONSUME_CONTEXT_TYPE",
    "ConsumeMessageContext",
    "ConsumeMessageHook",
    "RPCHook",
    "SendMessageContext",
    "SendMessageHook",
    "run_consume_hooks",
    "run_send_hooks",
]
