"""Kafka's `client.properties`, read and written: the file a team already has for
`kafka-console-consumer --consumer.config`.

Read: `security.protocol`, `sasl.mechanism`, `sasl.jaas.config` with the PLAIN or SCRAM login
module's username and password, PEM trust and key stores (as files or inline), and
`ssl.endpoint.identification.algorithm`; JKS and PKCS12 stores are refused with what to do.
Written: the same keys, escaped as Java reads them (`streamjoin broker --kafka --tls` writes one
per listener; Spark's Kafka connector takes them with `kafka.` in front).
"""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import tempfile
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamjoin.errors import ConfigurationError
from streamjoin.kafka.security import KafkaSecurity

__all__ = (
    "client_properties",
    "parse_client_properties",
    "properties_text",
    "read_client_properties",
)

_JAAS_MODULES = {
    "org.apache.kafka.common.security.plain.PlainLoginModule": "PLAIN",
    "org.apache.kafka.common.security.scram.ScramLoginModule": "SCRAM",
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule": "OAUTHBEARER",
    "com.sun.security.auth.module.Krb5LoginModule": "GSSAPI",
}
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;]+))')
_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


_BLANK = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescaped(text: str) -> str:
    """A properties value with Java's escapes resolved (\\n, \\uXXXX, \\x for x)."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code.startswith("u") and len(code) == 5:
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, code)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", one, text)


def _split(line: str) -> tuple[str, str]:
    match = re.match(r"([^=:\s]+)[ \t\f]*(?:[=:]|[ \t\f])[ \t\f]*(.*)", line.lstrip(_BLANK))
    if match is None:
        return line.strip(_BLANK), ""
    return match.group(1), _unescaped(match.group(2))


def properties_text(props: dict[str, str]) -> str:
    """`props` as the lines of a `.properties` file, escaped as Java reads them back."""
    return "".join(f"{key}={_escaped(value)}\n" for key, value in props.items())


def _escaped(value: str) -> str:
    value = value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "\\" + value if value[:1] in (" ", "\t", "\f") else value


def _pem(text: str, what: str) -> str:
    """Inline PEM as Kafka accepts it (line breaks often lost to continuations), re-wrapped."""
    blocks = _PEM_BLOCK.findall(text)
    if not blocks:
        raise ConfigurationError(f"{what} holds no PEM block (-----BEGIN ...-----)")
    return "".join(
        f"-----BEGIN {kind}-----\n"
        + "\n".join(textwrap.wrap(re.sub(r"\s+", "", body), 64))
        + f"\n-----END {kind}-----\n"
        for kind, body in blocks
    )


@functools.cache
def _private_dir() -> Path:
    """A directory only this user can read, removed when the process exits."""
    directory = Path(tempfile.mkdtemp(prefix="streamjoin-tls-"))
    atexit.register(shutil.rmtree, directory, True)
    return directory


def _private_file(name: str, content: str) -> str:
    """`content` in a private file, removed when the process exits."""
    path = _private_dir() / name
    path.touch(mode=0o600)
    path.write_text(content)
    return str(path)


def _pem_store(props: Mapping[str, str], store: str, base: Path) -> str | None:
    """The PEM file of `ssl.<store>.location`, checking `ssl.<store>.type`."""
    location = props.get(f"ssl.{store}.location")
    if not location:
        return None
    path = base / location
    kind = props.get(f"ssl.{store}.type", "").upper()
    try:
        looks_pem = path.read_bytes().lstrip().startswith(b"-----BEGIN")
    except OSError as exc:
        raise ConfigurationError(
            f"ssl.{store}.location {location}: {exc.strerror or exc}".lower()
        ) from None
    if kind not in ("", "PEM") or not looks_pem:
        raise ConfigurationError(
            f"ssl.{store}.location {location} is a {kind or 'JKS'} store: streamjoin reads PEM "
            f"only; export it (keytool -exportcert -rfc, or openssl pkcs12 -nodes) and set "
            f"ssl.{store}.type=PEM"
        )
    return str(path)


def _jaas(config: str, mechanism: str | None) -> dict[str, Any]:
    module = config.split(maxsplit=1)[0] if config.split() else ""
    family = _JAAS_MODULES.get(module)
    if family is None:
        raise ConfigurationError(f"sasl.jaas.config: unknown login module {module!r}")
    if family == "OAUTHBEARER":
        raise ConfigurationError(
            "sasl.jaas.config OAuthBearerLoginModule: give the token provider in the app "
            "(KafkaSecurity(sasl_oauth_token_provider=...))"
        )
    if family == "SCRAM" and not (mechanism or "").startswith("SCRAM-"):
        raise ConfigurationError(
            "sasl.jaas.config ScramLoginModule needs sasl.mechanism=SCRAM-SHA-256 or SCRAM-SHA-512"
        )
    options = {
        m.group(1): re.sub(r"\\(.)", r"\1", m.group(2)) if m.group(2) is not None else m.group(3)
        for m in _JAAS_OPTION.finditer(config)
    }
    found: dict[str, Any] = {}
    if "username" in options:
        found["sasl_username"] = options["username"]
    if "password" in options:
        found["sasl_password"] = options["password"]
    return found


def parse_client_properties(text: str, base: Path) -> dict[str, Any]:
    """The security settings of a Kafka `client.properties` text; relative store locations are
    taken from `base`. Keys that are not about security (bootstrap.servers, group.id) are left
    to the command's own options."""
    props = dict(_split(line) for line in _logical_lines(text))
    found: dict[str, Any] = {}
    if "security.protocol" in props:
        found["security_protocol"] = props["security.protocol"]
    mechanism = props.get("sasl.mechanism", "").upper() or None
    if mechanism:
        found["sasl_mechanism"] = mechanism
    if "sasl.jaas.config" in props:
        found |= _jaas(props["sasl.jaas.config"], mechanism)
    if "sasl.kerberos.service.name" in props:
        found["sasl_kerberos_service_name"] = props["sasl.kerberos.service.name"]
    if "ssl.endpoint.identification.algorithm" in props:
        found["ssl_check_hostname"] = bool(props["ssl.endpoint.identification.algorithm"])
    if "ssl.truststore.certificates" in props:
        found["ssl_cafile"] = _private_file(
            "ca.pem", _pem(props["ssl.truststore.certificates"], "ssl.truststore.certificates")
        )
    elif (cafile := _pem_store(props, "truststore", base)) is not None:
        found["ssl_cafile"] = cafile
    if "ssl.keystore.certificate.chain" in props:
        found["ssl_certfile"] = _private_file(
            "client.pem",
            _pem(props["ssl.keystore.certificate.chain"], "ssl.keystore.certificate.chain"),
        )
        if "ssl.keystore.key" not in props:
            raise ConfigurationError("ssl.keystore.certificate.chain needs ssl.keystore.key")
        found["ssl_keyfile"] = _private_file(
            "client.key", _pem(props["ssl.keystore.key"], "ssl.keystore.key")
        )
    elif (certfile := _pem_store(props, "keystore", base)) is not None:
        found["ssl_certfile"] = certfile
    if props.get("ssl.key.password"):
        found["ssl_password"] = props["ssl.key.password"]
    return found


def _logical_lines(text: str) -> list[str]:
    """Java `.properties` lines: `#`/`!` comments, a trailing backslash continuing the line
    (leading blanks of the continuation dropped)."""
    lines: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        line = raw.lstrip()
        if pending is None and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = (pending or "") + line[:-1]
            continue
        lines.append((pending or "") + line)
        pending = None
    if pending:
        lines.append(pending)
    return lines


def read_client_properties(path: Path) -> dict[str, Any]:
    """The security settings of the properties file at `path` (`--kafka-config`)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigurationError(
            f"--kafka-config {path}: {(exc.strerror or str(exc)).lower()}"
        ) from None
    return parse_client_properties(text, path.parent)


def _jaas_line(security: KafkaSecurity) -> str:
    module = (
        "org.apache.kafka.common.security.plain.PlainLoginModule"
        if security.mechanism == "PLAIN"
        else "org.apache.kafka.common.security.scram.ScramLoginModule"
    )
    user, password = (
        (text or "").replace("\\", "\\\\").replace('"', '\\"')
        for text in (security.sasl_username, security.sasl_password)
    )
    return f'{module} required username="{user}" password="{password}";'


def client_properties(security: KafkaSecurity) -> dict[str, str]:
    """`security` as Kafka's Java client properties (for a `client.properties` file and for
    Spark's Kafka connector, with `kafka.` before each key). Secrets included: write them
    only where the user keeps them."""
    props = {"security.protocol": security.security_protocol}
    if security.uses_tls:
        if security.ssl_cafile:
            props |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": security.ssl_cafile}
        if security.ssl_certfile:
            props["ssl.keystore.type"] = "PEM"
            if security.ssl_keyfile:
                props["ssl.keystore.certificate.chain"] = Path(security.ssl_certfile).read_text()
                props["ssl.keystore.key"] = Path(security.ssl_keyfile).read_text()
            else:
                props["ssl.keystore.location"] = security.ssl_certfile
            if security.ssl_password:
                props["ssl.key.password"] = security.ssl_password
        if not security.ssl_check_hostname:
            props["ssl.endpoint.identification.algorithm"] = ""
    if security.uses_sasl:
        props["sasl.mechanism"] = security.mechanism
        if security.mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            props["sasl.jaas.config"] = _jaas_line(security)
    return props
