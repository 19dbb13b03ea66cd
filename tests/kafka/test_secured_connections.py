"""The commands on Apache Kafka's secured listeners: TLS, mutual TLS, SASL_SSL with PLAIN and
SCRAM-SHA-256/512, each through a client.properties file as a user has it; and every way of
getting it wrong, each one line and a non-zero exit, without the password."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from streamjoin.broker import KafkaBroker
from streamjoin.broker.tls import make_certificates
from streamjoin.cli import app
from streamjoin.kafka.client_properties import client_properties, properties_text

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(300)]

PASSWORD = "alice-secret"
runner = CliRunner()

CLIENTS = {
    # name: (listener, SASL mechanism, client certificate)
    "tls": ("SSL", "PLAIN", False),
    "mutual-tls": ("MTLS", "PLAIN", True),
    "sasl-plain": ("SASL_SSL", "PLAIN", False),
    "scram-256": ("SASL_SSL", "SCRAM-SHA-256", False),
    "scram-512": ("SASL_SSL", "SCRAM-SHA-512", False),
}


def client_config(broker: KafkaBroker, directory: Path, name: str) -> Path:
    """The client.properties a user of `name`'s listener would have."""
    listener, mechanism, cert = CLIENTS[name]
    path = directory / f"{name}.properties"
    security = broker.client_security(listener, mechanism=mechanism, client_cert=cert)
    path.write_text(properties_text(client_properties(security)))
    return path


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_topics_produce_and_consume_over_each_listener(
    secured_kafka: KafkaBroker, tmp_path: Path, client: str
) -> None:
    listener = CLIENTS[client][0]
    secured = ["--bootstrap", secured_kafka.address(listener)]
    secured += ["--kafka-config", str(client_config(secured_kafka, tmp_path, client))]
    topic = f"secured-{client}-{uuid.uuid4().hex[:6]}"
    created = runner.invoke(app, ["topics", "create", topic, "--partitions", "2", *secured])
    assert created.exit_code == 0, created.output
    sent = runner.invoke(app, ["produce", topic, *secured], input="k1\tv1\nk2\tv2\n")
    assert sent.exit_code == 0, sent.output
    read = runner.invoke(app, ["consume", topic, "--from-beginning", "--max", "2", *secured])
    assert read.exit_code == 0, read.output
    assert sorted(line.rsplit(" ", 1)[1] for line in read.output.splitlines()) == [
        "value=v1",
        "value=v2",
    ]


def refused(
    *args: str, password: str = PASSWORD, command: tuple[str, ...] = ("topics", "list")
) -> str:
    """A command that must fail: status 2, one error line, no traceback, no password."""
    env = {**os.environ, "STREAMJOIN_SASL_PASSWORD": password}
    done = subprocess.run(
        [sys.executable, "-m", "streamjoin", *command, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert not password or password not in done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr  # (a worker logs its settings first)
    return errors[0]


def test_a_ca_that_did_not_sign_the_broker_is_named(
    secured_kafka: KafkaBroker, tmp_path: Path
) -> None:
    other = make_certificates(tmp_path / "other", name="other")
    line = refused(
        *("--bootstrap", secured_kafka.address("SSL"), "--security-protocol", "SSL"),
        *("--ssl-cafile", str(other.ca)),
    )
    assert "is not trusted (unable to get local issuer certificate)" in line
    assert f"--ssl-cafile, now {other.ca}" in line


def test_mutual_tls_without_a_client_certificate(secured_kafka: KafkaBroker) -> None:
    assert secured_kafka.tls is not None
    line = refused(
        *("--bootstrap", secured_kafka.address("MTLS"), "--security-protocol", "SSL"),
        *("--ssl-cafile", str(secured_kafka.tls.ca)),
    )
    assert "TLS handshake with" in line and "requires a client certificate" in line


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_wrong_password(secured_kafka: KafkaBroker, tmp_path: Path, mechanism: str) -> None:
    assert secured_kafka.tls is not None
    line = refused(
        *("--bootstrap", secured_kafka.address("SASL_SSL"), "--security-protocol", "SASL_SSL"),
        *("--ssl-cafile", str(secured_kafka.tls.ca), "--sasl-mechanism", mechanism),
        *("--sasl-username", "alice"),
        password="not-the-password",
    )
    assert f"SASL authentication failed at {secured_kafka.address('SASL_SSL')}" in line
    assert f"for user 'alice' ({mechanism}); check the username and password" in line


def test_a_mechanism_the_listener_does_not_enable(secured_kafka: KafkaBroker) -> None:
    line = refused(
        *("--bootstrap", secured_kafka.address("SCRAM_ONLY")),
        *("--security-protocol", "SASL_PLAINTEXT", "--sasl-mechanism", "PLAIN"),
        *("--sasl-username", "alice"),
    )
    assert "does not enable SASL PLAIN; check --sasl-mechanism" in line


def test_plaintext_at_a_tls_listener_and_tls_at_a_plaintext_one(
    secured_kafka: KafkaBroker,
) -> None:
    assert secured_kafka.tls is not None
    line = refused("--bootstrap", secured_kafka.address("SSL"))
    assert "speaks TLS, and this client connects without it" in line
    assert "use --security-protocol SSL" in line
    line = refused(
        *("--bootstrap", secured_kafka.bootstrap, "--security-protocol", "SSL"),
        *("--ssl-cafile", str(secured_kafka.tls.ca)),
    )
    assert "closed the connection during the TLS handshake" in line


def test_plaintext_at_a_sasl_listener(secured_kafka: KafkaBroker) -> None:
    line = refused("--bootstrap", secured_kafka.address("SCRAM_ONLY"))
    assert "this listener probably requires SASL" in line


def test_unusable_settings_are_refused_before_connecting(tmp_path: Path) -> None:
    line = refused("--kafka-config", str(tmp_path / "missing.properties"))
    assert "no such file" in line
    line = refused("--security-protocol", "SASL_SSL", "--sasl-username", "alice", password="")
    assert "SASL PLAIN needs a username and a password" in line


def test_help_shows_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STREAMJOIN_SASL_PASSWORD", PASSWORD)
    shown = runner.invoke(app, ["worker", "--help"], terminal_width=200)
    assert shown.exit_code == 0
    assert "--sasl-password" in shown.output and "--kafka-config" in shown.output
    assert PASSWORD not in shown.output


OAUTH_APP = """
import base64
import json
import time

from aiokafka.abc import AbstractTokenProvider

import streamjoin


def _part(fields):
    return base64.urlsafe_b64encode(json.dumps(fields).encode()).rstrip(b"=").decode()


class UnsecuredTokens(AbstractTokenProvider):
    async def token(self):
        now = int(time.time())
        claims = {{"sub": "alice", "iat": now, "exp": now + 3600}}
        return f"{{_part({{'alg': 'none'}})}}.{{_part(claims)}}."


joins = streamjoin.App(
    "oauth-{suffix}",
    security=streamjoin.KafkaSecurity(
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="OAUTHBEARER",
        sasl_oauth_token_provider=UnsecuredTokens(),
    ),
)
left = joins.topic("left-{suffix}")
right = joins.topic("right-{suffix}")


@joins.join(left, right, window=streamjoin.JoinWindows(before=0, after=1_000), into="out-{suffix}")
def joined(a, b):
    return a
"""


def test_oauthbearer_with_the_apps_token_provider(
    secured_kafka: KafkaBroker, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:6]
    (tmp_path / "oauth_app.py").write_text(OAUTH_APP.format(suffix=suffix))
    plain = ["--bootstrap", secured_kafka.bootstrap]
    created = runner.invoke(
        app, ["topics", "create", f"left-{suffix}", f"right-{suffix}", "-p", "3", *plain]
    )
    assert created.exit_code == 0, created.output
    oauth = ["--bootstrap", secured_kafka.address("OAUTH")]
    described = runner.invoke(
        app, ["describe", "oauth_app:joins", "--app-dir", str(tmp_path), *oauth]
    )
    assert described.exit_code == 0, described.output
    assert f"Source: left-{suffix} (3 partitions)" in described.output


def test_a_worker_with_a_wrong_password_stops_at_once(
    secured_kafka: KafkaBroker, tmp_path: Path
) -> None:
    (tmp_path / "oauth_app.py").write_text(OAUTH_APP.format(suffix="w"))
    assert secured_kafka.tls is not None
    worker = ("worker", "oauth_app:joins", "--app-dir", str(tmp_path))
    line = refused(
        *("--bootstrap", secured_kafka.address("SASL_SSL"), "--security-protocol", "SASL_SSL"),
        *("--ssl-cafile", str(secured_kafka.tls.ca), "--sasl-mechanism", "SCRAM-SHA-512"),
        *("--sasl-username", "alice", "--state-dir", str(tmp_path / "state")),
        password="wrong-password",
        command=worker,
    )
    # The options override the app's OAUTHBEARER settings, field by field.
    assert "SASL authentication failed" in line and "(SCRAM-SHA-512)" in line
