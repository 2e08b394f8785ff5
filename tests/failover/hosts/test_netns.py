"""The namespace harness: hosts reach each other, faults cut exactly what they say, and nothing
is left behind."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from tests.support import netns

pytestmark = [pytest.mark.timeout(60)]

if (_reason := netns.skip_reason()) is not None:
    pytestmark.append(pytest.mark.skip(reason=_reason))


def _listen(net: netns.Network, host: str) -> socket.socket:
    with net.enter(host):
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind((net.addr(host), 7000))
    server.listen()
    return server


def test_hosts_reach_each_other_and_faults_cut_only_what_they_name() -> None:
    with netns.Network() as net:
        for name in ("a", "b", "c"):
            net.add_host(name)
        servers = [_listen(net, name) for name in ("a", "b", "c")]
        try:
            assert net.reachable("a", "b", 7000) and net.reachable("c", "b", 7000)
            net.cut("a", "b")
            assert not net.reachable("a", "b", 7000)
            assert not net.reachable("b", "a", 7000)
            assert net.reachable("c", "b", 7000) and net.reachable("a", "c", 7000)
            net.mend("a", "b")
            assert net.reachable("a", "b", 7000)
            net.isolate("c")
            assert not net.reachable("a", "c", 7000) and not net.reachable("c", "b", 7000)
            assert net.reachable("a", "b", 7000)
            net.heal("c")
            assert net.reachable("a", "c", 7000)
        finally:
            for server in servers:
                server.close()
        names = [h.ns for h in net.hosts.values()] + [net.hub]
    left = subprocess.run(["ip", "netns", "list"], check=False, capture_output=True, text=True).stdout
    assert not any(name in left for name in names)


def test_a_process_runs_inside_its_host_and_sees_no_other_network() -> None:
    with netns.Network() as net:
        net.add_host("a")
        code = "import socket,sys; s=socket.socket(); s.settimeout(1); print(s.connect_ex(('192.0.2.1', 80)))"
        out = subprocess.run(net.command("a", [sys.executable, "-c", code]), check=False, capture_output=True, text=True)
        # No default route inside a host: an address outside the test subnet is unreachable.
        assert out.returncode == 0 and int(out.stdout.strip()) != 0
        routes = subprocess.run(net.command("a", ["ip", "route"]), check=False, capture_output=True, text=True).stdout
        assert "default" not in routes and "198.18.0.0/24" in routes


def test_namespaces_of_a_crashed_run_are_removed() -> None:
    # A namespace named as if made by a process that no longer exists, with a process still in it.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = f"{netns.PREFIX}{dead.pid}-hub"
    subprocess.run(["ip", "netns", "add", stale], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", stale, "sleep", "60"])
    try:
        removed = netns.clean_stale()
        assert stale in removed
        assert sleeper.wait(10) == -9
    finally:
        if sleeper.poll() is None:
            os.kill(sleeper.pid, 9)
        subprocess.run(["ip", "netns", "del", stale], check=False, capture_output=True)
    assert stale not in subprocess.run(["ip", "netns", "list"], check=False, capture_output=True, text=True).stdout
