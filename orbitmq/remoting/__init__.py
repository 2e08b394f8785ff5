"""RocketMQ's remoting protocol: frames, codes, headers and the asyncio transport.

* `command` — RemotingCommand, the unit of the protocol.
* `codes` — RequestCode, ResponseCode.
* `codec` — frames <-> commands, sans-IO (`encode`, `FrameDecoder`).
* `headers` (+ `admin_headers`, `header_base`) — typed custom headers.
* `transport` — RemotingServer, RemotingClient; `connection` (Peer), `pending`, `eager`.
* `loop` — uvloop-aware `run()`.
"""
