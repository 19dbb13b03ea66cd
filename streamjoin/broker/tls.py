"""Certificates for a local secured broker, made with the `openssl` command (no download).

A CA, a broker certificate for `localhost` and 127.0.0.1 (key and chain in one PEM file, as
Kafka's `ssl.keystore.type=PEM` reads it) and a client certificate for mutual TLS, all signed
by the CA, with P-256 keys (fast to make).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from streamjoin.broker.errors import BrokerError

__all__ = ("TlsFiles", "make_certificates")

_DAYS = "3650"
_EC = ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the CA certificate, the broker's key and chain, the client's cert and key."""

    ca: Path
    broker: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str | Path) -> None:
    binary = shutil.which("openssl")
    if binary is None:
        raise BrokerError("making TLS certificates needs the `openssl` command; install OpenSSL")
    done = subprocess.run(
        [binary, *map(str, args)], capture_output=True, text=True, check=False, timeout=60
    )
    if done.returncode != 0:
        raise BrokerError(f"openssl {args[0]} failed: {done.stderr.strip()}")


def _signed(directory: Path, name: str, subject: str, extensions: str, ca: Path) -> Path:
    """A new key and a certificate for it signed by the CA; returns the certificate."""
    key, csr, cert = (directory / f"{name}.{suffix}" for suffix in ("key", "csr", "pem"))
    ext = directory / f"{name}.ext"
    ext.write_text(f"[ext]\n{extensions}\n")
    _openssl("genpkey", *_EC, "-out", key)
    _openssl("req", "-new", "-key", key, "-subj", subject, "-out", csr)
    _openssl(
        "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", directory / "ca.key",
        "-CAcreateserial", "-days", _DAYS, "-extfile", ext, "-extensions", "ext", "-out", cert,
    )  # fmt: skip
    csr.unlink()
    ext.unlink()
    return cert


def make_certificates(directory: Path, *, name: str = "streamjoin") -> TlsFiles:
    """Make the CA, broker and client certificates in `directory` (created, private)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    ca = directory / "ca.pem"
    _openssl("genpkey", *_EC, "-out", directory / "ca.key")
    _openssl(
        "req", "-x509", "-new", "-key", directory / "ca.key", "-days", _DAYS,
        "-subj", f"/CN={name} test CA", "-out", ca,
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    server = _signed(
        directory,
        "broker-cert",
        "/CN=localhost",
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth",
        ca,
    )
    broker = directory / "broker.pem"
    broker.write_text((directory / "broker-cert.key").read_text() + server.read_text())
    client = _signed(directory, "client", f"/CN={name}-client", "extendedKeyUsage=clientAuth", ca)
    return TlsFiles(ca, broker, client, directory / "client.key")
