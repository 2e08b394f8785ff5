"""PushConsumer: subscribe, and the client pulls (long polling) and calls your listener.

    consumer = PushConsumer("CG", namesrv_addr="127.0.0.1:9876")
    consumer.subscribe("T", "TagA || TagB")
    consumer.register_listener(handle)          # handle(msgs) -> ConsumeResult, sync or async
    await consumer.start()
    ...
    await consumer.shutdown()

Guarantees (RocketMQ 4.9's DefaultMQPushConsumer): at-least-once delivery;
in clustering mode each queue is consumed by one member of the group
(rebalance every 20 s and whenever the group changes); in broadcasting mode
every member gets every message. Consumed offsets are stored on the broker
every 5 s and at shutdown (clustering) or in a local file (broadcasting).
A message whose listener fails is redelivered, never dropped silently.
Orderly listeners (`register_orderly_listener`) see each queue's messages
one batch at a time, in order, and only while holding the queue's broker lock.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any, Unpack

from orbitmq.client.config import PushConsumerOptions, pop_trace_options
from orbitmq.client.consume_concurrently import ConcurrentConsumeService, RetryChoice
from orbitmq.client.consume_orderly import OrderlyConsumeService
from orbitmq.client.consumer import ConsumerService
from orbitmq.client.hooks import ConsumeMessageHook
from orbitmq.client.listener import Listener, ListenerRunner
from orbitmq.client.message_selector import MessageSelector, subscription_data
from orbitmq.client.offset_store import ReadOffsetType
from orbitmq.client.process_queue import ProcessQueue, pull_delay_ms
from orbitmq.client.producer import trace_producers
from orbitmq.client.pulling import compute_pull_from_where
from orbitmq.client.queue import MessageQueue
from orbitmq.client.rebalance import Rebalance
from orbitmq.client.results import PullStatus
from orbitmq.client.running_info import ConsumerStats, consume_once, describe_consumer
from orbitmq.client.tasks import cancel_and_wait
from orbitmq.client.trace_dispatch import TraceDispatcher, TracedListenerRunner
from orbitmq.client.validation import check_group, check_topic
from orbitmq.common.filter import SUB_ALL, SubscriptionData, build_subscription
from orbitmq.common.message import MessageExt
from orbitmq.common.names import retry_topic
from orbitmq.errors import BrokerError, ClientError, MessageValidationError, RemotingError
from orbitmq.remoting.codes import ResponseCode
from orbitmq.remoting.sysflag import PullSysFlag

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 5.0
#: Pull answers meaning the broker does not know our subscription (SUBSCRIPTION_NOT_EXIST, _NOT_LATEST).
SUBSCRIPTION_UNKNOWN_CODES = frozenset({ResponseCode.SUBSCRIPTION_NOT_EXIST, ResponseCode.SUBSCRIPTION_NOT_LATEST})


class PushConsumer(ConsumerService):
    consume_type = "CONSUME_PASSIVELY"

    def __init__(self, group: str = "DEFAULT_CONSUMER", **options: Unpack[PushConsumerOptions]) -> None:
        """`options` are `ConsumerConfig`'s fields (see config.py) and the message trace switches."""
        kwargs: dict[str, Any] = dict(options)
        trace_enabled, trace_topic = pop_trace_options(kwargs)
        super().__init__(group, kwargs)
        #: Message trace (enable_msg_trace=True, trace_topic=...): see trace_dispatch.py.
        self._trace = TraceDispatcher(trace_producers(self.config), trace_topic) if trace_enabled else None
        self.subscriptions: dict[str, SubscriptionData] = {}
        self._listener: Listener | None = None
        self._orderly = False
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._last_extra_heartbeat = 0.0
        self._side_tasks: set[asyncio.Task[None]] = set()
        #: Pull and consume figures per topic, reported in GET_CONSUMER_RUNNING_INFO.
        self.stats = ConsumerStats()
        #: ConsumeMessageHook objects (hooks.py), called around every listener call.
        self.consume_hooks: list[ConsumeMessageHook] = []

    # --- configuration ---------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | MessageSelector = "*") -> None:
        """Consume `topic` messages whose tag matches `expression` ("*", "TagA", "TagA || TagB"),
        or those a `MessageSelector.by_sql(...)` selects (SQL92 on properties, evaluated by the broker)."""
        check_topic(topic)
        self.subscriptions[topic] = subscription_data(topic, expression)

    def unsubscribe(self, topic: str) -> None:
        self.subscriptions.pop(topic, None)

    def register_listener(self, listener: Listener) -> None:
        """`listener(msgs)` returns ConsumeResult.CONSUME_SUCCESS or RECONSUME_LATER.

        `listener(msgs, context)` also gets a ConsumeConcurrentlyContext for retry choices."""
        self._listener = listener
        self._orderly = False

    def register_orderly_listener(self, listener: Listener) -> None:
        """`listener(msgs)` returns ConsumeOrderlyResult.SUCCESS or SUSPEND_CURRENT_QUEUE_A_MOMENT.

        `listener(msgs, context)` also gets a ConsumeOrderlyContext (pause, DLQ, auto_commit)."""
        self._listener = listener
        self._orderly = True

    def register_consume_message_hook(self, hook: ConsumeMessageHook) -> None:
        """Call `hook.consume_message_before/after(context)` around every listener call
        (DefaultMQPushConsumerImpl.registerConsumeMessageHook); see hooks.py."""
        if not isinstance(hook, ConsumeMessageHook):
            raise ClientError("a consume message hook needs hook_name, consume_message_before and consume_message_after")
        self.consume_hooks.append(hook)

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Join the client instance, announce the group (heartbeat) and take queues (rebalance)."""
        if self._instance is not None:
            return
        check_group(self.group)
        if self.group == "DEFAULT_CONSUMER":
            raise MessageValidationError("consumerGroup can not equal DEFAULT_CONSUMER, please specify another one.")
        if self._listener is None:
            raise ClientError("messageListener is null: register a listener before start()")
        if not self.subscriptions:
            raise ClientError("no subscription: call subscribe() before start()")
        if self.clustering:
            self.subscriptions.setdefault(retry_topic(self.group), build_subscription(retry_topic(self.group), SUB_ALL))
        instance = await self.join()
        self.rebalancer = Rebalance(
            self.group, self.config.message_model, self.config.allocate_strategy, instance, self,
            orderly=self._orderly,
        )
        assert self._listener is not None
        runner = ListenerRunner(self._listener, self.config.consume_thread_max,
                                self.config.consume_timeout_minutes * 60.0,
                                self.config.consume_thread_min) if self._trace is None else \
            TracedListenerRunner(self._listener, self.config.consume_thread_max,
                                 self.config.consume_timeout_minutes * 60.0, self._trace, self.group,
                                 self.config.consume_thread_min)
        orderly = self._orderly
        runner.consume_hooks = self.consume_hooks
        runner.orderly = orderly
        runner.on_result = lambda msgs, result, rt_ms: self.stats.consumed(msgs, result, rt_ms, orderly)
        runner.group = self.group
        self._runner = runner
        self.consume_service: ConcurrentConsumeService | OrderlyConsumeService
        if self._orderly:
            self.consume_service = OrderlyConsumeService(
                self.config, runner, self.offset_store, self.rebalancer, self._send_to_dlq)
            self.consume_service.start()
        else:
            self.consume_service = ConcurrentConsumeService(self.config, runner, self.offset_store, self._send_back)
        for topic in self.subscriptions:
            try:
                await instance.update_route(topic)
            except (RemotingError, BrokerError, ClientError) as exc:
                log.warning("route of %s not available yet: %s", topic, exc)
        try:
            await instance.check_client_in_broker(self.group, self.subscription_datas())
        except BaseException:
            await self.shutdown()
            raise
        await instance.send_heartbeat_to_all()
        await self.rebalance()
        instance.trigger_rebalance()

    async def shutdown(self) -> None:
        """Stop pulling, let running listeners finish, store offsets, leave the group."""
        instance, self._instance = self._instance, None
        if instance is None:
            return
        await self.rebalancer.stop()
        await cancel_and_wait(self._pull_tasks.values())
        self._pull_tasks.clear()
        await cancel_and_wait(self._side_tasks)
        await self.consume_service.shutdown(SHUTDOWN_GRACE_S)
        held = list(self.rebalancer.process_queues)
        await self._persist(held, oneway=False)
        if self._orderly and self.clustering:
            await self.rebalancer.unlock(held)
        for pq in self.rebalancer.process_queues.values():
            pq.dropped = True
        if self._trace is not None:
            await self._trace.close()
        await self.leave(instance)

    # --- ConsumerMember (called by the client instance) --------------------------------------

    def subscription_datas(self) -> Iterable[SubscriptionData]:
        return self.subscriptions.values()

    def subscribed_topics(self) -> set[str]:
        return set(self.subscriptions)

    async def rebalance(self) -> None:
        if self._instance is not None:
            await self.rebalancer.do_rebalance(self.subscriptions)

    async def persist_offsets(self) -> None:
        if self._instance is not None:
            await self._persist(list(self.rebalancer.process_queues), oneway=True)

    async def on_offset_reset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """The broker reset the group's offsets (admin resetOffsetByTime): restart those queues there."""
        for mq, offset in offsets.items():
            if mq.topic != topic:
                continue
            self.offset_store.update_offset(mq, offset, False)
            pq = self.rebalancer.process_queues.get(mq)
            if pq is not None:
                pq.dropped = True
                task = self._pull_tasks.pop(mq, None)
                if task is not None:
                    task.cancel()
                fresh: ProcessQueue[Any] = ProcessQueue()
                fresh.locked, fresh.last_lock_ms = pq.locked, pq.last_lock_ms
                self.rebalancer.process_queues[mq] = fresh
                self.dispatch_pull(mq, fresh, offset)
        await self._persist([mq for mq in offsets if mq.topic == topic], oneway=False)

    # --- RebalanceHooks -------------------------------------------------------------------------

    async def compute_pull_from_where(self, mq: MessageQueue) -> int:
        return await compute_pull_from_where(self.config, self.offset_store, self.lookups, mq)

    async def remove_unnecessary_queue(self, mq: MessageQueue, pq: ProcessQueue[Any]) -> bool:
        task = self._pull_tasks.pop(mq, None)
        if task is not None:
            task.cancel()
        if self._orderly and self.clustering:
            assert isinstance(self.consume_service, OrderlyConsumeService)
            lock = self.consume_service.queue_lock(mq)
            try:
                await asyncio.wait_for(lock.acquire(), 1.0)
            except TimeoutError:
                return False  # a batch is being consumed; try again next rebalance
            try:
                await self.offset_store.persist(mq)
                self.offset_store.remove_offset(mq)
                await self.rebalancer.unlock([mq])
            finally:
                lock.release()
            return True
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        return True

    def dispatch_pull(self, mq: MessageQueue, pq: ProcessQueue[Any], offset: int) -> None:
        self._pull_tasks[mq] = asyncio.ensure_future(self._pull_loop(mq, pq, offset))

    async def queues_changed(self, topic: str) -> None:
        # Tell the brokers at once so that they see our current subscription (Java does the same).
        instance = self._instance
        if instance is not None:  # None while shutting down
            await instance.send_heartbeat_to_all()

    # --- admin questions (running_info.py) --------------------------------------------------

    async def running_info(self) -> dict[str, Any]:
        """ConsumerRunningInfo as Java's DefaultMQPushConsumerImpl fills it (the instance adds its part)."""
        if self._instance is None:
            raise ClientError("The consumer service state not OK (call start())")
        info = await describe_consumer(self.config, self.subscriptions.values(), self.rebalancer.process_queues,
                                       self.offset_store, {
                                           "PROP_CONSUMEORDERLY": "true" if self._orderly else "false",
                                           "PROP_THREADPOOL_CORE_SIZE": str(self.config.consume_thread_min),
                                           "PROP_CONSUMER_START_TIMESTAMP": str(self._started_ms),
                                           "PROP_CONSUME_TYPE": "CONSUME_PASSIVELY",
                                       })
        info["statusTable"] = {topic: self.stats.status(topic) for topic in sorted(self.subscriptions)}
        return info

    async def consume_directly(self, msg: MessageExt, broker_name: str | None) -> dict[str, Any]:
        """Run the listener once on `msg` (CONSUME_MESSAGE_DIRECTLY); nothing is committed or sent back."""
        if self._instance is None:
            raise ClientError("The consumer service state not OK (call start())")
        # `broker_name` (where the message is stored) matters to Java's listener context; ours take only msgs.
        self._prepare([msg])
        return await consume_once(self._runner, msg, self._orderly)

    # --- pulling -------------------------------------------------------------------------------

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue[Any], offset: int) -> None:
        cfg = self.config
        sd = self.subscriptions.get(mq.topic) or build_subscription(mq.topic, SUB_ALL)
        if self.clustering:
            # The offset reached so far, so that the broker can store it with the pull (commit flag).
            self.offset_store.update_offset(mq, offset, True)
        while not pq.dropped:
            delay = pull_delay_ms(pq, orderly=self._orderly, threshold_count=cfg.pull_threshold_for_queue,
                                  threshold_size_mib=cfg.pull_threshold_size_for_queue,
                                  max_span=cfg.consume_concurrently_max_span)
            if delay:
                await asyncio.sleep(delay / 1000)
                continue
            if self._orderly and self.clustering and not pq.locked:
                await asyncio.sleep(cfg.pull_time_delay_ms_when_exception / 1000)
                continue
            pulled_at = time.monotonic()
            pq.last_pull_ms = int(pulled_at * 1000)
            sys_flag = PullSysFlag.SUSPEND
            commit_offset = 0
            if self.clustering:
                commit_offset = max(await self.offset_store.read_offset(mq, ReadOffsetType.MEMORY), 0)
                if commit_offset > 0:
                    sys_flag |= PullSysFlag.COMMIT_OFFSET
            if cfg.post_subscription_when_pull:
                sys_flag |= PullSysFlag.SUBSCRIPTION
            try:
                result = await self.pulling.pull(
                    mq, sd, offset, cfg.pull_batch_size, sys_flag, commit_offset, cfg.broker_suspend_max_time_ms,
                    cfg.consumer_timeout_when_suspend_ms / 1000,
                    send_expression=cfg.post_subscription_when_pull,
                )
            except asyncio.CancelledError:
                raise
            except BrokerError as exc:
                delay_s = 0.02 if exc.code == ResponseCode.FLOW_CONTROL else cfg.pull_time_delay_ms_when_exception / 1000
                log.info("pull of %s failed: %s", mq, exc)
                if exc.code in SUBSCRIPTION_UNKNOWN_CODES:
                    # A restarted broker forgot us; tell it now rather than at the next 30 s heartbeat.
                    self._heartbeat_soon()
                await asyncio.sleep(delay_s)
                continue
            except (RemotingError, ClientError) as exc:
                log.info("pull of %s failed: %s", mq, exc)
                await asyncio.sleep(cfg.pull_time_delay_ms_when_exception / 1000)
                continue
            if pq.dropped:
                break
            self.stats.pulled(mq.topic, (time.monotonic() - pulled_at) * 1000, len(result.messages))
            if result.status is PullStatus.FOUND:
                offset = result.next_begin_offset
                msgs = self._prepare(result.messages)
                if msgs:
                    dispatch = pq.put_messages(msgs)
                    if isinstance(self.consume_service, OrderlyConsumeService):
                        self.consume_service.submit(msgs, pq, mq, dispatch)
                    else:
                        self.consume_service.submit(msgs, pq, mq)
                elif pq.msg_count == 0:
                    self.offset_store.update_offset(mq, offset, True)
            elif result.status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
                offset = result.next_begin_offset
                if pq.msg_count == 0:
                    # Nothing in flight: the filtered-out range counts as consumed.
                    self.offset_store.update_offset(mq, offset, True)
            else:  # OFFSET_ILLEGAL: the broker says where the queue really starts or ends
                log.warning("offset %d of %s is illegal; moving to %d", offset, mq, result.next_begin_offset)
                offset = result.next_begin_offset
                self.offset_store.update_offset(mq, offset, False)
                await self.offset_store.persist(mq)
            if cfg.pull_interval_ms:
                await asyncio.sleep(cfg.pull_interval_ms / 1000)

    def _heartbeat_soon(self) -> None:
        """One heartbeat to all brokers, at most once a second however many queues ask."""
        now = time.monotonic()
        if self._instance is None or now - self._last_extra_heartbeat < 1.0:
            return
        self._last_extra_heartbeat = now
        task = asyncio.ensure_future(self._instance.send_heartbeat_to_all())
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    def _prepare(self, msgs: list[MessageExt]) -> list[MessageExt]:
        """Restore the original topic of retried messages (the tag filter ran in PullHelper)."""
        retry = retry_topic(self.group)
        for msg in msgs:
            if msg.topic == retry:
                original = msg.properties.get("RETRY_TOPIC")
                if original:
                    msg.topic = original
        return msgs

    # --- failed messages ---------------------------------------------------------------------------

    async def _send_back(self, msg: MessageExt, mq: MessageQueue, choice: RetryChoice) -> bool:
        """Return a failed message to the broker for redelivery; True when it is safely stored."""
        return await self.pulling.send_back(msg, mq, delay_level=choice.delay_level, delay_ms=choice.delay_ms,
                                            max_reconsume=self._max_reconsume())

    async def _send_to_dlq(self, msg: MessageExt, mq: MessageQueue) -> bool:
        return await self.pulling.send_back(msg, mq, delay_level=-1, max_reconsume=self._max_reconsume())

    def _max_reconsume(self) -> int:
        if self.config.max_reconsume_times >= 0:
            return self.config.max_reconsume_times
        return (1 << 31) - 1 if self._orderly else 16

    # --- lookups -------------------------------------------------------------------------------------

    async def fetch_subscribe_message_queues(self, topic: str) -> set[MessageQueue]:
        return await self.instance.subscribe_queues(topic)

    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        return await self.lookups.view_message(msg_id, topic)
