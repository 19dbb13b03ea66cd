"""Where the security settings come from, layered field by field: the app's, then a Kafka
`client.properties` file (`--kafka-config`, `streamjoin.kafka.client_properties`), then
STREAMJOIN_* environment variables, then the command line's options.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamjoin.kafka.client_properties import read_client_properties
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.kafka.security import KafkaSecurity

__all__ = ("ENV_VARS", "connection_from_environment", "from_env", "resolve_security")

ENV_VARS = {
    "STREAMJOIN_SECURITY_PROTOCOL": "security_protocol",
    "STREAMJOIN_SSL_CAFILE": "ssl_cafile",
    "STREAMJOIN_SSL_CERTFILE": "ssl_certfile",
    "STREAMJOIN_SSL_KEYFILE": "ssl_keyfile",
    "STREAMJOIN_SSL_PASSWORD": "ssl_password",
    "STREAMJOIN_SSL_CHECK_HOSTNAME": "ssl_check_hostname",
    "STREAMJOIN_SASL_MECHANISM": "sasl_mechanism",
    "STREAMJOIN_SASL_USERNAME": "sasl_username",
    "STREAMJOIN_SASL_PASSWORD": "sasl_password",
}
"""Environment variable -> KafkaSecurity field."""

_FALSE = ("0", "false", "no", "off")


def from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """The settings given by STREAMJOIN_* environment variables."""
    found: dict[str, Any] = {}
    for name, setting in ENV_VARS.items():
        value = environ.get(name)
        if value:
            found[setting] = value.lower() not in _FALSE if setting.endswith("hostname") else value
    return found


def resolve_security(
    app: KafkaSecurity | None = None,
    *,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> KafkaSecurity:
    """The settings in force: each layer overrides the one before it, field by field — the
    app's, the properties file's, the environment's, the command line's."""
    merged = dict(app.settings()) if app is not None else {}
    if config_file is not None:
        merged |= read_client_properties(config_file)
    merged |= from_env(os.environ if environ is None else environ)
    merged |= {k: v for k, v in (options or {}).items() if v is not None}
    return KafkaSecurity(**merged)


def connection_from_environment(bootstrap: str) -> KafkaConnection:
    """`bootstrap` with the settings of the environment alone (STREAMJOIN_KAFKA_CONFIG and the
    STREAMJOIN_* variables): for tools without the commands' options, such as the demos."""
    config = os.environ.get("STREAMJOIN_KAFKA_CONFIG")
    security = resolve_security(None, config_file=Path(config) if config else None)
    return KafkaConnection(bootstrap, security)
