"""Why a connection to Kafka failed, in one line a user can act on.

aiokafka logs each failed bootstrap attempt ("Unable connect to ...") with the error and then
raises a bare "Unable to bootstrap"; `collected_errors` keeps those errors instead of the log
lines, and `explain` turns a TLS or SASL failure among them into a message naming the cause
and the setting to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager

from aiokafka.errors import (
    IllegalSaslStateError,
    KafkaError,
    SaslAuthenticationFailed,
    UnsupportedSaslMechanismError,
)

from streamjoin.errors import StreamJoinError
from streamjoin.kafka.security import KafkaSecurity

__all__ = ("KafkaSecurityError", "collected_errors", "explain", "in_words", "speaks_tls")

_HANDSHAKE_S = 3.0

_FAILED_ATTEMPTS = ("Unable connect to", "Unable to request metadata from")


class KafkaSecurityError(StreamJoinError):
    """A TLS handshake or SASL authentication with the broker failed."""


def in_words(error: BaseException) -> str:
    """An OS or client error as a few lower-case words."""
    if isinstance(error, TimeoutError):
        return "timed out"
    if isinstance(error, OSError) and error.errno and error.errno > 0:
        return os.strerror(error.errno).lower()
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    if isinstance(error, KafkaError) and error.args:
        return str(error.args[0])  # its str() repeats the class name
    return str(error) or type(error).__name__


@contextmanager
def collected_errors(bootstrap: str) -> Iterator[list[BaseException]]:
    """Collect, instead of logging, aiokafka's failed attempts to reach `bootstrap`'s hosts:
    the one-line error made from them says the same once, in words."""
    hosts = {address.strip() for address in bootstrap.split(",")}
    found: list[BaseException] = []

    def keep(record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        if record.msg.startswith(_FAILED_ATTEMPTS) and len(args) == 3:
            host, port, error = args
            if f"{host}:{port}" in hosts and isinstance(error, BaseException):
                found.append(error)
                return False
        return True

    client_log = logging.getLogger("aiokafka")
    client_log.addFilter(keep)
    try:
        yield found
    finally:
        client_log.removeFilter(keep)


def _tls_failure(error: ssl.SSLError, address: str, security: KafkaSecurity) -> str:
    reason = getattr(error, "verify_message", None) or error.reason or str(error)
    if isinstance(error, ssl.SSLCertVerificationError):
        if getattr(error, "verify_code", 0) == 62:  # X509_V_ERR_HOSTNAME_MISMATCH
            return (
                f"TLS: the certificate of the broker at {address} does not name that host "
                f"({reason}); connect by a name it holds, or turn the check off with "
                "--ssl-no-check-hostname"
            )
        return (
            f"TLS: the certificate of the broker at {address} is not trusted ({reason}); "
            f"check the CA file (--ssl-cafile, now {security.ssl_cafile or 'the system CAs'})"
        )
    refused = any(w in str(error).upper() for w in ("CERTIFICATE_REQUIRED", "BAD_CERTIFICATE"))
    if refused and not security.ssl_certfile:
        return (
            f"TLS handshake with {address} failed: the broker requires a client certificate "
            "(mutual TLS); give --ssl-certfile and --ssl-keyfile"
        )
    if any(word in str(error).upper() for word in ("BAD_CERTIFICATE", "UNKNOWN_CA")):
        return (
            f"TLS handshake with {address} failed: the broker refused the client certificate "
            f"({reason}); check --ssl-certfile against the CA the broker trusts"
        )
    if any(word in str(error).upper() for word in ("WRONG_VERSION_NUMBER", "RECORD_LAYER")):
        return (
            f"TLS handshake with {address} failed: the listener does not speak TLS; check the "
            f"port, or --security-protocol (now {security.security_protocol})"
        )
    return f"TLS handshake with {address} failed ({reason}); check the TLS settings and the port"


def _sasl_failure(error: KafkaError, address: str, security: KafkaSecurity) -> str | None:
    if isinstance(error, SaslAuthenticationFailed):
        return (
            f"SASL authentication failed at {address} for user {security.sasl_username!r} "
            f"({security.mechanism}); check the username and password (--sasl-username, "
            "STREAMJOIN_SASL_PASSWORD) and the mechanism"
        )
    if isinstance(error, UnsupportedSaslMechanismError):
        said = str(error.args[0]) if error.args else ""
        enabled = said.rpartition("Enabled mechanisms are: ")[2] if "Enabled" in said else ""
        return (
            f"the broker at {address} does not enable SASL {security.mechanism}"
            f"{f' (enabled: {enabled})' if enabled else ''}; check --sasl-mechanism"
        )
    if isinstance(error, IllegalSaslStateError):
        return (
            f"the listener at {address} does not expect SASL; check the port, or "
            f"--security-protocol (now {security.security_protocol})"
        )
    return None


def explain(
    errors: list[BaseException], address: str, security: KafkaSecurity, *, tls_listener: bool
) -> str | None:
    """A one-line message for the first TLS or SASL failure among `errors`, or for a client
    without TLS at a listener that speaks TLS (`tls_listener`, from `speaks_tls`); None when
    the failure is about reaching the broker at all."""
    for error in errors:
        cause = error.__cause__ or error.__context__
        for candidate in (error, cause):
            if isinstance(candidate, ssl.SSLError):
                return _tls_failure(candidate, address, security)
            if isinstance(candidate, KafkaError):
                message = _sasl_failure(candidate, address, security)
                if message is not None:
                    return message
    if tls_listener and not security.uses_tls:
        tls_protocol = "SASL_SSL" if security.uses_sasl else "SSL"
        return (
            f"the listener at {address} speaks TLS, and this client connects without it "
            f"(security protocol {security.security_protocol}); use --security-protocol "
            f"{tls_protocol} with --ssl-cafile"
        )
    if errors and all(_closed_early(e) for e in errors):
        if security.uses_tls:
            return (
                f"the broker at {address} closed the connection during the TLS handshake: "
                f"check that this listener speaks TLS, and --security-protocol (now "
                f"{security.security_protocol})"
            )
        if not security.uses_sasl:
            return (
                f"the broker at {address} closed the connection after the first request: this "
                "listener probably requires SASL; check the port, and --security-protocol "
                "(SASL_PLAINTEXT or SASL_SSL) with --sasl-mechanism"
            )
    return None


def _closed_early(error: BaseException) -> bool:
    """The broker hung up before answering (not: refused the connection, timed out)."""
    if isinstance(error, ConnectionResetError):
        return True
    return isinstance(error, ConnectionError | KafkaError) and "closed" in in_words(error).lower()


async def speaks_tls(bootstrap: str) -> bool:
    """Whether the first bootstrap address completes a TLS handshake (certificate unchecked):
    tells a plaintext client that the listener wants TLS."""
    host, _, port = bootstrap.split(",", maxsplit=1)[0].strip().rpartition(":")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        async with asyncio.timeout(_HANDSHAKE_S):
            _, writer = await asyncio.open_connection(host, int(port), ssl=context)
    except (OSError, ValueError, TimeoutError, ssl.SSLError):
        return False
    writer.close()
    with contextlib.suppress(OSError, ssl.SSLError):
        await writer.wait_closed()
    return True
