"""`orbitmq console --tlsConfigFile`, and the console of a TLS `orbitmq dev`, reach servers that speak only TLS."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.console.conftest import console_url
from tests.support.procs import ServerProcess, eventually, orbitmq_command, start_server
from tests.tls.conftest import Pki
from tests.tls.test_cluster_tls import tls_properties

pytestmark = pytest.mark.timeout(90)


def _cluster(url: str, context: ssl.SSLContext | None = None) -> Any:
    with urllib.request.urlopen(f"{url}/api/cluster", timeout=20, context=context) as r:
        return json.loads(r.read())


def _https_client(pki: Pki) -> ssl.SSLContext:
    """A browser's view of the console: trusts the test CA, shows the client certificate (mutual TLS)."""
    ctx = ssl.create_default_context(cafile=str(pki.ca))
    ctx.check_hostname = False  # the server certificate names 127.0.0.1 as an IP address
    ctx.load_cert_chain(str(pki.client_cert), str(pki.client_key))
    return ctx


def test_console_with_tls_options_reads_an_enforcing_cluster(
    tmp_path: Path, pki: Pki, procs: list[ServerProcess]
) -> None:
    tls_file = tls_properties(tmp_path, pki, "require")
    conf = tmp_path / "broker.conf"
    conf.write_text(f"tls.server.mode=enforcing\ntls.enable=true\ntls.config.file={tls_file}\n")
    dev = start_server(orbitmq_command("dev", "--store", str(tmp_path / "data"), "--namesrv-port", "0",
                                       "--broker-port", "0", "--console", "127.0.0.1:0", "-c", str(conf)),
                       listeners=2)
    procs.append(dev)
    secure = start_server(orbitmq_command("console", "-n", dev.addr, "--listen", "127.0.0.1:0",
                                          "--tlsConfigFile", str(tls_file)), listeners=0)
    procs.append(secure)
    plain = start_server(orbitmq_command("console", "-n", dev.addr, "--listen", "127.0.0.1:0"), listeners=0)
    procs.append(plain)
    secure_url, plain_url, dev_url = console_url(secure), console_url(plain), console_url(dev)

    eventually(lambda: [b["brokerName"] for b in _cluster(secure_url)["brokers"]] == ["broker-a"],
               timeout=30, message="the TLS console never listed the broker")
    broker = _cluster(secure_url)["brokers"][0]
    assert broker["error"] == "" and broker["runtime"]["brokerVersionDesc"]
    # orbitmq dev's own console connects with the broker's client TLS settings, and serves HTTPS
    # (its port follows tls.server.mode like the others): a plain HTTP request gets nothing.
    dev_https = dev_url.replace("http://", "https://")
    assert _cluster(dev_https, _https_client(pki))["brokers"][0]["error"] == ""
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _cluster(dev_url)
    stranger = ssl.create_default_context(cafile=str(pki.ca))
    stranger.check_hostname = False
    with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
        _cluster(dev_https, stranger)  # no client certificate: refused (tls.server.need.client.auth=require)
    with pytest.raises(urllib.error.HTTPError) as refused:
        _cluster(plain_url)
    assert refused.value.code == 502
