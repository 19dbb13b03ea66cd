"""How streamjoin authenticates to Kafka: one settings object that every connection takes.

`KafkaSecurity` holds the TLS and SASL settings and turns them into aiokafka's keyword
arguments (`client_kwargs`); `streamjoin.kafka.connection.KafkaConnection` pairs it with the
bootstrap address and is the only place that creates aiokafka clients. Secrets (the key
password, the SASL password, the token provider) never appear in its repr.
"""

from __future__ import annotations

import functools
import ssl
from dataclasses import dataclass, field, fields
from typing import Any

from aiokafka.abc import AbstractTokenProvider
from aiokafka.helpers import create_ssl_context

from streamjoin.errors import ConfigurationError

__all__ = ("MECHANISMS", "PROTOCOLS", "SECRET_FIELDS", "KafkaSecurity")

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")
SECRET_FIELDS = frozenset({"ssl_password", "sasl_password", "sasl_oauth_token_provider"})


@dataclass(frozen=True)
class KafkaSecurity:
    """TLS and SASL settings of every Kafka connection (Kafka's client property in brackets).

    The default is PLAINTEXT: no TLS, no authentication.
    """

    security_protocol: str = "PLAINTEXT"
    """PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL (security.protocol)."""
    ssl_cafile: str | None = None
    """PEM file of the CA certificates to trust; None: the system's (ssl.truststore.*)."""
    ssl_certfile: str | None = None
    """PEM client certificate chain for mutual TLS; may hold the key too (ssl.keystore.*)."""
    ssl_keyfile: str | None = None
    """PEM private key of the client certificate (ssl.keystore.key)."""
    ssl_password: str | None = field(default=None, repr=False)
    """Password of an encrypted private key (ssl.key.password)."""
    ssl_check_hostname: bool = True
    """Check that the broker's certificate names its host (ssl.endpoint.identification.algorithm
    =https); the certificate is verified against the CA either way."""
    sasl_mechanism: str | None = None
    """PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI (sasl.mechanism); default
    PLAIN under a SASL protocol."""
    sasl_username: str | None = None
    """SASL user (sasl.jaas.config's username)."""
    sasl_password: str | None = field(default=None, repr=False)
    """SASL password (sasl.jaas.config's password); never printed or logged."""
    sasl_oauth_token_provider: AbstractTokenProvider | None = field(default=None, repr=False)
    """For OAUTHBEARER: an aiokafka `AbstractTokenProvider` whose `token()` returns a token."""
    sasl_kerberos_service_name: str = "kafka"
    """For GSSAPI (sasl.kerberos.service.name); needs the `gssapi` package."""

    def __post_init__(self) -> None:
        protocol = self.security_protocol.upper()
        if protocol not in PROTOCOLS:
            raise ConfigurationError(
                f"security protocol {self.security_protocol!r}: use one of {', '.join(PROTOCOLS)}"
            )
        object.__setattr__(self, "security_protocol", protocol)
        if self.sasl_mechanism is not None:
            mechanism = self.sasl_mechanism.upper()
            if mechanism not in MECHANISMS:
                raise ConfigurationError(
                    f"SASL mechanism {self.sasl_mechanism!r}: use one of {', '.join(MECHANISMS)}"
                )
            object.__setattr__(self, "sasl_mechanism", mechanism)
        if self.uses_sasl:
            self._check_sasl()
        if self.ssl_keyfile and not self.ssl_certfile:
            raise ConfigurationError("an SSL key file needs its certificate (ssl_certfile) too")

    def _check_sasl(self) -> None:
        mechanism = self.mechanism
        if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and not (
            self.sasl_username and self.sasl_password is not None
        ):
            raise ConfigurationError(
                f"SASL {mechanism} needs a username and a password (--sasl-username, "
                "STREAMJOIN_SASL_PASSWORD)"
            )
        if mechanism == "OAUTHBEARER" and self.sasl_oauth_token_provider is None:
            raise ConfigurationError(
                "SASL OAUTHBEARER needs a token provider: "
                "App(..., security=KafkaSecurity(sasl_oauth_token_provider=...))"
            )

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def mechanism(self) -> str:
        """The SASL mechanism in use (PLAIN unless set)."""
        return self.sasl_mechanism or "PLAIN"

    def describe(self) -> str:
        """The settings in words, without secrets, for logs and error messages."""
        parts = [self.security_protocol]
        if self.uses_sasl:
            who = f" as {self.sasl_username}" if self.sasl_username else ""
            parts.append(f"{self.mechanism}{who}")
        if self.uses_tls:
            parts.append(f"CA {self.ssl_cafile or 'system'}")
            if self.ssl_certfile:
                parts.append(f"client certificate {self.ssl_certfile}")
            if not self.ssl_check_hostname:
                parts.append("no hostname check")
        return ", ".join(parts)

    def ssl_context(self) -> ssl.SSLContext:
        """A TLS context verifying the broker against the CA (and presenting the client
        certificate, for mutual TLS); a file that cannot be read is one ConfigurationError."""
        try:
            context: ssl.SSLContext = create_ssl_context(
                cafile=self.ssl_cafile,
                certfile=self.ssl_certfile,
                keyfile=self.ssl_keyfile,
                password=self.ssl_password,
            )
        except (OSError, ssl.SSLError) as exc:
            files = ", ".join(
                f for f in (self.ssl_cafile, self.ssl_certfile, self.ssl_keyfile) if f
            )
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise ConfigurationError(f"cannot load the TLS files ({files}): {reason}") from None
        context.check_hostname = self.ssl_check_hostname
        return context

    def client_kwargs(self) -> dict[str, Any]:
        """What every aiokafka client (consumer, producer, admin, bare client) takes."""
        kwargs: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.uses_tls:
            kwargs["ssl_context"] = _shared_context(self)
        if self.uses_sasl:
            kwargs |= {
                "sasl_mechanism": self.mechanism,
                "sasl_plain_username": self.sasl_username,
                "sasl_plain_password": self.sasl_password,
                "sasl_oauth_token_provider": self.sasl_oauth_token_provider,
                "sasl_kerberos_service_name": self.sasl_kerberos_service_name,
            }
        return kwargs

    def settings(self) -> dict[str, Any]:
        """The fields that differ from the defaults (what layering in `resolve` overlays)."""
        default = KafkaSecurity()
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }


@functools.lru_cache(maxsize=16)
def _shared_context(security: KafkaSecurity) -> ssl.SSLContext:
    """One TLS context per settings for all of a process's clients (files read once)."""
    return security.ssl_context()
