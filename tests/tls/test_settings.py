"""RocketMQ's tls.* keys: where they are accepted, what they build, what they refuse. No sockets."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization

from orbitmq.broker.config import BrokerConfig
from orbitmq.client.config import ProducerConfig, from_kwargs
from orbitmq.errors import ConfigError
from orbitmq.namesrv.config import NamesrvConfig
from orbitmq.remoting.tls import ClientAuth, TlsMode, TlsSettings
from orbitmq.spark.options import parse_sink_options
from tests.tls.conftest import Pki


def test_tls_is_off_unless_configured() -> None:
    settings = TlsSettings()
    assert settings.server_tls() is None
    assert settings.client_context() is None
    assert BrokerConfig().tls == settings and NamesrvConfig().tls == settings


def test_keys_are_rocketmqs_and_values_are_checked() -> None:
    settings = TlsSettings.from_properties({
        "tls.server.mode": "Enforcing", "tls.server.need.client.auth": "optional", "tls.enable": "true",
        "tls.client.authServer": "false",
    })
    assert settings.server_mode is TlsMode.ENFORCING
    assert settings.server_need_client_auth is ClientAuth.OPTIONAL
    assert settings.enable and not settings.client_auth_server
    with pytest.raises(ConfigError, match="tls.server.mode"):
        TlsSettings.from_properties({"tls.server.mode": "strict"})
    with pytest.raises(ConfigError, match="tls.enable"):
        TlsSettings.from_properties({"tls.enable": "yes"})
    with pytest.raises(ConfigError, match="tls.server.keypath"):
        TlsSettings.from_properties({"tls.server.keypath": "k.pem"})  # the key names are case-sensitive


def test_the_config_file_wins_over_direct_keys_except_mode_and_enable(tmp_path: Path) -> None:
    path = tmp_path / "tls.properties"
    path.write_text("tls.server.mode=disabled\ntls.enable=false\ntls.server.certPath=/from/file.pem\n"
                    "tls.test.mode.enable=true\n")
    settings = TlsSettings.from_properties({
        "tls.config.file": str(path), "tls.server.mode": "permissive", "tls.enable": "true",
        "tls.server.certPath": "/direct.pem",
    })
    assert settings.server_mode is TlsMode.PERMISSIVE and settings.enable
    assert settings.server_cert_path == "/from/file.pem" and settings.test_mode
    with pytest.raises(ConfigError, match="tls.config.file"):
        TlsSettings.from_properties({"tls.config.file": str(tmp_path / "missing.properties")})


def test_broker_conf_takes_tls_keys_reports_them_without_passwords_and_refuses_changing_them_live(pki: Pki) -> None:
    config = BrokerConfig.from_properties({
        "brokerName": "b", "tls.server.mode": "enforcing", "tls.server.certPath": str(pki.server_cert),
        "tls.server.keyPath": str(pki.server_key), "tls.server.keyPassword": "hunter2",
    })
    assert config.tls.server_mode is TlsMode.ENFORCING
    props = config.to_properties()
    assert props["tls.server.mode"] == "enforcing"
    assert "hunter2" not in repr(config) and "hunter2" not in props.values()
    with pytest.raises(ConfigError, match="restart"):
        config.with_properties({"tls.server.mode": "disabled"})
    with pytest.raises(ConfigError, match="unknown TLS key"):
        BrokerConfig.from_properties({"tls.server.modus": "enforcing"})


def test_namesrv_properties_take_tls_keys_at_start_only() -> None:
    config = NamesrvConfig.from_properties({"listenPort": "0", "tls.server.mode": "permissive"})
    assert config.tls.server_mode is TlsMode.PERMISSIVE
    assert config.to_properties()["tls.server.mode"] == "permissive"
    with pytest.raises(ConfigError, match="cannot be changed while running"):
        config.updated({"tls.server.mode": "disabled"})


def test_a_server_mode_without_a_certificate_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="tls.server.certPath"):
        TlsSettings(server_mode=TlsMode.ENFORCING).server_tls()


def test_test_mode_gives_a_server_without_a_certificate_a_throwaway_one() -> None:
    server = TlsSettings(server_mode=TlsMode.PERMISSIVE, test_mode=True).server_tls()
    assert server is not None and server.permissive


def test_asking_for_client_certificates_needs_a_trust_file(pki: Pki) -> None:
    base = TlsSettings(server_mode=TlsMode.ENFORCING, server_cert_path=str(pki.server_cert),
                       server_key_path=str(pki.server_key))
    for settings in (TlsSettings.with_properties(base, {"tls.server.need.client.auth": "require"}),
                     TlsSettings.with_properties(base, {"tls.server.authClient": "true"})):
        with pytest.raises(ConfigError, match="tls.server.trustCertPath"):
            settings.server_tls()
    required = base.with_properties({"tls.server.authClient": "true", "tls.server.trustCertPath": str(pki.ca)})
    assert required.server_context().verify_mode == ssl.CERT_REQUIRED
    optional = base.with_properties({"tls.server.need.client.auth": "optional",
                                     "tls.server.trustCertPath": str(pki.ca)})
    assert optional.server_context().verify_mode == ssl.CERT_OPTIONAL


def test_an_encrypted_key_loads_with_its_password_only(pki: Pki, tmp_path: Path) -> None:
    key = serialization.load_pem_private_key(pki.server_key.read_bytes(), password=None)
    encrypted = tmp_path / "encrypted.key"
    encrypted.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                            serialization.BestAvailableEncryption(b"s3cret")))
    base = TlsSettings(server_mode=TlsMode.ENFORCING, server_cert_path=str(pki.server_cert),
                       server_key_path=str(encrypted))
    assert base.with_properties({"tls.server.keyPassword": "s3cret"}).server_tls() is not None
    with pytest.raises(ConfigError, match="cannot load the certificate and key"):
        base.with_properties({"tls.server.keyPassword": "wrong"}).server_tls()


def test_client_contexts_verify_the_server_unless_in_test_mode(pki: Pki) -> None:
    verifying = TlsSettings.client(trust_cert_path=str(pki.ca)).client_context()
    assert verifying is not None and verifying.verify_mode == ssl.CERT_REQUIRED
    system = TlsSettings(enable=True).client_context()
    assert system is not None and system.verify_mode == ssl.CERT_REQUIRED
    testing = TlsSettings.client(test_mode=True).client_context()
    assert testing is not None and testing.verify_mode == ssl.CERT_NONE
    with pytest.raises(ConfigError, match="tls.client.trustCertPath"):
        TlsSettings.client(trust_cert_path=str(pki.server_key.with_suffix(".missing"))).client_context()


def test_client_options_take_a_mapping_of_client_keys_that_turns_tls_on(pki: Pki) -> None:
    config = from_kwargs(ProducerConfig, tls={"tls.client.trustCertPath": str(pki.ca)})
    assert config.tls is not None and config.tls.enable and config.ssl_context() is not None
    assert from_kwargs(ProducerConfig, use_tls=True).ssl_context() is not None
    assert from_kwargs(ProducerConfig).ssl_context() is None
    off = from_kwargs(ProducerConfig, tls={"tls.enable": "false", "tls.client.trustCertPath": str(pki.ca)})
    assert off.ssl_context() is None
    with pytest.raises(ConfigError, match="not a client TLS key"):
        from_kwargs(ProducerConfig, tls={"tls.server.mode": "enforcing"})


def test_spark_options_take_the_client_keys_in_any_case(pki: Pki) -> None:
    options = parse_sink_options({"namesrvaddr": "127.0.0.1:9876", "topic": "T",
                                  "tls.client.trustcertpath": str(pki.ca)})
    assert options.connection.tls is not None and options.connection.tls.enable
    assert options.connection.tls.client_trust_cert_path == str(pki.ca)
    with pytest.raises(ConfigError, match="tls.client.trustCertPath"):
        parse_sink_options({"namesrvAddr": "127.0.0.1:9876", "topic": "T", "tls.client.trustCertPath": "/nope.pem"})
