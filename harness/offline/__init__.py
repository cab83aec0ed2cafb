"""Offline for real: each task run's agent in a network namespace of its own (``netns``),
where every packet it sends past loopback is recorded and refused (``packets``)."""

from harness.offline.netns import HostNetwork, Netns, open_network

__all__ = ["HostNetwork", "Netns", "open_network"]
