"""OrbitMQ: a message queue that speaks Apache RocketMQ 4.x's protocol and keeps its store formats."""

__version__ = "0.1.0"
