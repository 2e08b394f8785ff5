"""Automatic failover of a broker group's master, coordinated through etcd (docs/failover.md).

`model` is the sans-IO core (key values, election ranking, fencing clock, in-sync set),
`etcd` the thin client shell (aetcd), `controller` the per-replica loop that drives a
broker through the `ReplicaHost` protocol (orbitmq/broker/replica.py implements it).
"""
