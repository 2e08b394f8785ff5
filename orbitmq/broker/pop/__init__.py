"""RocketMQ 5 POP consumption: receipt handles, invisible time, per-message ack, revive, FIFO.

* `orbitmq.common.extra_info` (shared with clients) — the `extraInfo` string, receipt
  handles and the POP response's offset summaries (sans-IO).
* `records` — checkpoint (CK) and ack records of the revive topic, their JSON bodies (sans-IO).
* `revive` — the in-flight table: CKs by revive queue, acks, what falls due (sans-IO).
* `order` — FIFO order info per topic, group and queue (sans-IO, persisted as JSON).
* `service` — `PopService`, the async shell: pops, acks, changes, the revive loop and recovery.

See docs/pop.md.
"""
