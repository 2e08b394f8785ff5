"""Timed messages (beyond RocketMQ 4): delivery at any millisecond up to a horizon.

* `props.py` — RocketMQ 5's property names and how a send's delivery time is read.
* `index.py` — the in-memory index of pending timers and its checkpoint rule (no I/O).
* `service.py` — `TimerService`: stores timers in the internal topic, rebuilds the
  index from it at start, delivers due messages and persists the checkpoint.
* `routing.py` — the send-path hook that picks timer, delay level or neither.
"""
