"""The TLS and SASL options every command that talks to Kafka shares, as one decorator.

`@security_options` adds `--kafka-config`, `--security-protocol`, `--ssl-*` and `--sasl-*` to
a command and hands it a `SecurityChoice` (its `security` parameter), which layers them over
the environment, the properties file and the app's own settings. Secrets have no defaults to
show in `--help`; the SASL password is best given by STREAMJOIN_SASL_PASSWORD (a command line
is visible to other users of the machine).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape

from streamjoin.cli import fail
from streamjoin.errors import StreamJoinError
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.security import KafkaSecurity
from streamjoin.kafka.security_config import resolve_security

__all__ = ("NOT_GIVEN", "SecurityChoice", "security_options")

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class SecurityChoice:
    """What the command line said about security: `--kafka-config` and the options given."""

    config_file: Path | None = None
    options: dict[str, Any] = field(default_factory=dict, repr=False)

    def resolve(self, app: KafkaSecurity | None = None) -> KafkaSecurity:
        """The settings in force: options > STREAMJOIN_* environment > file > `app`'s; settings
        that cannot be used end the command with one line."""
        try:
            return resolve_security(app, config_file=self.config_file, options=self.options)
        except StreamJoinError as exc:
            fail(escape(str(exc)))

    def connection(self, bootstrap: str, app: KafkaSecurity | None = None) -> KafkaConnection:
        return KafkaConnection(bootstrap, self.resolve(app))


NOT_GIVEN = SecurityChoice()
"""A command's `security` default, replaced by `security_options` with what was given."""


def _option(
    name: str, kind: Any, help_text: str, *decls: str, default: Any = None, **extra: Any
) -> inspect.Parameter:
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=default,
        annotation=Annotated[
            kind, typer.Option(*decls, help=help_text, show_default=False, **extra)
        ],
    )


_OPTIONS = (
    _option(
        "kafka_config",
        Path | None,
        "Kafka client properties file (as for kafka-console-consumer): security.protocol, "
        "ssl.*, sasl.* (STREAMJOIN_KAFKA_CONFIG).",
        metavar="FILE",
        envvar="STREAMJOIN_KAFKA_CONFIG",
    ),
    _option(
        "security_protocol",
        str | None,
        "PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL (STREAMJOIN_SECURITY_PROTOCOL).",
        metavar="PROTOCOL",
    ),
    _option(
        "ssl_cafile",
        str | None,
        "PEM file of the CA certificates that sign the brokers' (default: the system's).",
        metavar="FILE",
    ),
    _option("ssl_certfile", str | None, "PEM client certificate, for mutual TLS.", metavar="FILE"),
    _option("ssl_keyfile", str | None, "PEM key of the client certificate.", metavar="FILE"),
    _option(
        "ssl_no_check_hostname",
        bool,
        "Do not check that the broker's certificate names its host (it is still verified).",
        "--ssl-no-check-hostname",
        default=False,
    ),
    _option(
        "sasl_mechanism",
        str | None,
        "PLAIN (default), SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI (STREAMJOIN_SASL_MECHANISM).",
        metavar="MECHANISM",
    ),
    _option("sasl_username", str | None, "SASL user (STREAMJOIN_SASL_USERNAME).", metavar="USER"),
    _option(
        "sasl_password",
        str | None,
        "SASL password; better from STREAMJOIN_SASL_PASSWORD or --kafka-config, which other "
        "users cannot see.",
        metavar="PASSWORD",
    ),
)
_NAMES = tuple(p.name for p in _OPTIONS)


def _choice(values: dict[str, Any]) -> SecurityChoice:
    config_file = values.pop("kafka_config")
    if values.pop("ssl_no_check_hostname"):
        values["ssl_check_hostname"] = False
    return SecurityChoice(config_file, {k: v for k, v in values.items() if v is not None})


def security_options(command: F) -> F:
    """Give `command` the security options; it receives them as `security: SecurityChoice`."""
    signature = inspect.signature(command, eval_str=True)
    kept = [p for p in signature.parameters.values() if p.name != "security"]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        kwargs["security"] = _choice({name: kwargs.pop(name, None) for name in _NAMES})
        return command(*args, **kwargs)

    parameters = [*kept, *_OPTIONS]
    wrapper.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper  # type: ignore[return-value]
