"""The NameServer: topic routes and KV config for RocketMQ clients and brokers.

Embed one with `NameServer(NamesrvConfig(...))`; run one with `orbitmq namesrv`.
"""

from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.namesrv.server import NameServer

__all__ = ["NameServer", "NamesrvConfig"]
