"""Security settings without a broker: Kafka's client.properties, the layering of app, file,
environment and command line, what aiokafka gets, secrets kept out of reprs, and the settings
shipped to Spark's workers."""

from __future__ import annotations

import ssl
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from streamjoin.broker.tls import TlsFiles, make_certificates
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.client_properties import (
    client_properties,
    parse_client_properties,
    properties_text,
)
from streamjoin.kafka.connect_errors import explain
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.security import KafkaSecurity
from streamjoin.kafka.security_config import resolve_security
from streamjoin.kafka.security_shipping import ship, unship

SCRAM = """\
# as for kafka-console-consumer --consumer.config
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="alice" \\
    password="s3cr=t;x";
ssl.truststore.type=PEM
ssl.truststore.location=ca.pem
ssl.endpoint.identification.algorithm=
bootstrap.servers=ignored:9092
"""


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_certificates(tmp_path_factory.mktemp("tls"))


def test_a_scram_client_properties_file(tls: TlsFiles) -> None:
    found = parse_client_properties(SCRAM, tls.ca.parent)
    assert found == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_username": "alice",
        "sasl_password": "s3cr=t;x",
        "ssl_cafile": str(tls.ca),
        "ssl_check_hostname": False,
    }


def test_plain_login_module_and_inline_pem_stores(tls: TlsFiles) -> None:
    ca_lines = tls.ca.read_text().strip().splitlines()
    inline = " \\\n  ".join(ca_lines)  # how Kafka's docs write PEM in a properties file
    text = (
        "security.protocol = SSL\n"
        f"ssl.truststore.certificates={inline}\n"
        f"ssl.keystore.certificate.chain={' '.join(tls.client_cert.read_text().splitlines())}\n"
        f"ssl.keystore.key={' '.join(tls.client_key.read_text().splitlines())}\n"
    )
    found = parse_client_properties(text, Path("."))
    assert Path(found["ssl_cafile"]).read_text() == tls.ca.read_text()
    assert Path(found["ssl_keyfile"]).read_text() == tls.client_key.read_text()
    security = KafkaSecurity(**found)
    assert isinstance(security.client_kwargs()["ssl_context"], ssl.SSLContext)
    plain = parse_client_properties(
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="bob" password="pw";',
        Path("."),
    )
    assert plain == {"sasl_username": "bob", "sasl_password": "pw"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ssl.truststore.location=trust.jks\n", r"JKS store: streamjoin reads PEM only"),
        ("ssl.truststore.location=missing.pem\n", r"no such file"),
        ("sasl.jaas.config=com.example.Login required;\n", r"unknown login module"),
        (
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n",
            r"needs sasl.mechanism=SCRAM-SHA-256",
        ),
    ],
)
def test_unusable_properties_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "trust.jks").write_bytes(b"\xfe\xed\xfe\xed binary")
    with pytest.raises(ConfigurationError, match=message):
        parse_client_properties(text, tmp_path)


def test_layers_command_line_over_environment_over_file_over_app(tmp_path: Path) -> None:
    config = tmp_path / "client.properties"
    config.write_text(SCRAM.replace("ssl.truststore", "#"))
    app = KafkaSecurity("SSL", ssl_cafile="/app/ca.pem", ssl_check_hostname=True)
    environ = {"STREAMJOIN_SASL_PASSWORD": "from-env", "STREAMJOIN_SASL_USERNAME": "eve"}
    resolved = resolve_security(
        app, config_file=config, environ=environ, options={"sasl_username": "carol"}
    )
    assert resolved.security_protocol == "SASL_SSL"  # the file's, over the app's
    assert resolved.ssl_cafile == "/app/ca.pem"  # the app's: nobody else set it
    assert resolved.sasl_password == "from-env"  # the environment's, over the file's
    assert resolved.sasl_username == "carol"  # the command line's, over everything
    assert resolve_security(None, environ={}) == KafkaSecurity()


def test_secrets_stay_out_of_repr_and_descriptions() -> None:
    security = KafkaSecurity(
        "SASL_SSL", sasl_mechanism="scram-sha-256", sasl_username="alice", sasl_password="hunter2"
    )
    shown = [repr(security), security.describe(), str(KafkaConnection("k:9093", security))]
    shown.append(repr(KafkaConnection("k:9093", security)))
    assert not [text for text in shown if "hunter2" in text]
    assert security.mechanism == "SCRAM-SHA-256"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"security_protocol": "TLS"}, "use one of PLAINTEXT, SSL"),
        ({"security_protocol": "SASL_SSL"}, "needs a username and a password"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"}, "token provider"),
        ({"sasl_mechanism": "KERBEROS"}, "use one of PLAIN"),
        ({"security_protocol": "SSL", "ssl_cafile": "/nowhere.pem"}, "cannot load the TLS"),
    ],
)
def test_settings_that_cannot_work_are_refused(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        KafkaSecurity(**settings).client_kwargs()  # type: ignore[arg-type]


PRINTABLE = st.characters(min_codepoint=32, max_codepoint=126)


@given(
    user=st.text(PRINTABLE, min_size=1),
    password=st.text(PRINTABLE, min_size=1),
    mechanism=st.sampled_from(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]),
)
def test_client_properties_read_back_as_written(user: str, password: str, mechanism: str) -> None:
    written = KafkaSecurity(
        "SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_username=user, sasl_password=password
    )
    text = properties_text(client_properties(written))
    assert KafkaSecurity(**parse_client_properties(text, Path("."))) == written


def test_settings_travel_to_spark_workers_with_their_files(tls: TlsFiles) -> None:
    security = KafkaSecurity(
        "SASL_SSL",
        ssl_cafile=str(tls.ca),
        ssl_certfile=str(tls.client_cert),
        ssl_keyfile=str(tls.client_key),
        sasl_username="alice",
        sasl_password="hunter2",
    )
    options = ship(security)
    assert list(options) == ["security_secret"]  # Spark redacts options named *secret*
    arrived = unship(options)
    assert Path(str(arrived.ssl_keyfile)).read_text() == tls.client_key.read_text()
    assert replace(arrived, ssl_cafile=None, ssl_certfile=None, ssl_keyfile=None) == replace(
        security, ssl_cafile=None, ssl_certfile=None, ssl_keyfile=None
    )
    assert ship(KafkaSecurity()) == {} and unship({}) == KafkaSecurity()


def test_a_certificate_for_another_host_names_the_hostname_check() -> None:
    mismatch = ssl.SSLCertVerificationError(1, "certificate verify failed")
    mismatch.verify_code = 62  # X509_V_ERR_HOSTNAME_MISMATCH
    mismatch.verify_message = "Hostname mismatch, certificate is not valid for 'kafka-1'."
    security = KafkaSecurity("SSL")
    line = explain([mismatch], "kafka-1:9093", security, tls_listener=False)
    assert line is not None and "does not name that host" in line
    assert "--ssl-no-check-hostname" in line
    unchecked = KafkaSecurity("SSL", ssl_check_hostname=False).client_kwargs()["ssl_context"]
    assert not unchecked.check_hostname and unchecked.verify_mode == ssl.CERT_REQUIRED


def test_spark_tasks_unshipping_at_once_all_get_the_file(tmp_path: Path) -> None:
    """Spark's tasks in one process unship the same settings at the same moment: each writes
    the TLS file into place without tripping over the others (a shared temporary name made
    one task's rename fail)."""
    ca = tmp_path / "ca.pem"
    ca.write_text(f"-----BEGIN CERTIFICATE-----\n{uuid.uuid4().hex}\n")  # a file not yet written
    options = ship(KafkaSecurity("SSL", ssl_cafile=str(ca)))
    start = threading.Barrier(16)

    def unship_together(_: int) -> str:
        start.wait()
        return str(unship(options).ssl_cafile)

    with ThreadPoolExecutor(16) as pool:
        paths = set(pool.map(unship_together, range(16)))
    assert len(paths) == 1
    assert Path(paths.pop()).read_text() == ca.read_text()
