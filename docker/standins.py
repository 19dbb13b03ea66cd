"""The compose file's two base images, `python:3.11-slim` and `apache/kafka:<release>`: pulled
from their registry, or, where none is reachable (as on the project's machines), local stand-ins
built under the same names from Debian's packages and Maven Central only.

A minimal Debian bookworm made by mmdebstrap (imported as streamjoin-standin/debian:bookworm) is
the base of both: standins/python.Dockerfile adds Debian's Python 3.11, standins/kafka.Dockerfile
OpenJDK 17 and the release's jars (standins/kafka/pom.xml, copied by Maven into
~/.cache/streamjoin/kafka-image-<release>/). Each stand-in carries the label `STANDIN_LABEL`
with a digest of its recipe (these files and the release); the pair is saved under that digest
in ~/.cache/streamjoin/docker/ and loaded from there on the next run, and rebuilt when the
recipe changes.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from pathlib import Path

from streamjoin.broker.kafka_jars import kafka_version
from streamjoin.maven_jars import cache_dir, copy_dependencies

__all__ = ("STANDIN_LABEL", "base_images", "provide_base_images", "recipe_digest")

RECIPE = Path(__file__).resolve().parent / "standins"
STANDIN_LABEL = "org.streamjoin.standin"
BASE = "streamjoin-standin/debian:bookworm"
_MIRROR = "http://deb.debian.org/debian"
_HOST_CAS = Path("/usr/local/share/ca-certificates")
_PULL_TIMEOUT_S = 300


def base_images() -> tuple[str, str]:
    """The Dockerfile's base image and the compose file's Kafka image."""
    return "python:3.11-slim", f"apache/kafka:{kafka_version()}"


def recipe_digest() -> str:
    """A digest of everything a stand-in is built from."""
    digest = hashlib.sha256(kafka_version().encode())
    for path in sorted(p for p in RECIPE.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(RECIPE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def _docker(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _checked(*args: str) -> str:
    done = _docker(*args)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise RuntimeError(f"docker {' '.join(args[:2])} failed:\n{tail}")
    return done.stdout


def _label(image: str) -> str | None:
    """The image's stand-in label: None if the image is missing, "" if it is not a stand-in."""
    done = _docker(
        "image", "inspect", "--format", f'{{{{index .Config.Labels "{STANDIN_LABEL}"}}}}', image
    )
    if done.returncode != 0:
        return None
    shown = done.stdout.strip()
    return "" if shown in ("", "<no value>") else shown


def _pulled(image: str) -> bool:
    try:
        return _docker("pull", "--quiet", image, timeout=_PULL_TIMEOUT_S).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def _debian_base() -> None:
    """Minimal Debian bookworm by mmdebstrap, imported as BASE."""
    if shutil.which("mmdebstrap") is None:
        installed = subprocess.run(
            ["apt-get", "install", "-y", "-qq", "mmdebstrap"],
            capture_output=True,
            text=True,
            check=False,
        )
        if installed.returncode != 0:
            raise RuntimeError(f"apt-get install mmdebstrap failed: {installed.stderr.strip()}")
    with subprocess.Popen(
        ["mmdebstrap", "--quiet", "--variant=minbase", "--include=ca-certificates",
         "--format=tar", "bookworm", "-", _MIRROR],
        stdout=subprocess.PIPE,
    ) as debian:  # fmt: skip
        imported = subprocess.run(
            ["docker", "import", "--change", 'CMD ["bash"]', "-", BASE],
            stdin=debian.stdout,
            capture_output=True,
            text=True,
            check=False,
        )
    if debian.returncode != 0 or imported.returncode != 0:
        raise RuntimeError(f"mmdebstrap | docker import failed: {imported.stderr.strip()}")


def _build(image: str, dockerfile: str, context: Path, digest: str) -> None:
    _checked(
        "build", "--label", f"{STANDIN_LABEL}={digest}", "--tag", image,
        "--file", str(RECIPE / dockerfile), str(context),
    )  # fmt: skip


def _build_standins(work: Path, digest: str) -> None:
    python, kafka = base_images()
    if _label(BASE) is None:
        _debian_base()
    # The host's own certificate authorities, trusted by the python stand-in's pip.
    ca = work / "python" / "ca"
    ca.mkdir(parents=True)
    for certificate in _HOST_CAS.rglob("*.crt") if _HOST_CAS.is_dir() else ():
        shutil.copy(certificate, ca / certificate.name)
    _build(python, "python.Dockerfile", work / "python", digest)
    jars = copy_dependencies(
        RECIPE / "kafka" / "pom.xml",
        cache_dir(f"kafka-image-{kafka_version()}"),
        f"the apache/kafka stand-in's jars (Kafka {kafka_version()})",
        {"kafka.version": kafka_version()},
    )
    context = work / "kafka"
    shutil.copytree(jars, context / "libs", ignore=shutil.ignore_patterns(".*"))
    shutil.copytree(RECIPE / "kafka", context / "kafka", ignore=shutil.ignore_patterns("pom.xml"))
    _build(kafka, "kafka.Dockerfile", context, digest)


def provide_base_images(cache: Path) -> str:
    """Make both base images available to the engine; returns one line saying where they came
    from (the registry, or local stand-ins and why)."""
    images = base_images()
    labels = {image: _label(image) for image in images}
    if all(label == "" for label in labels.values()):
        return f"base images {' and '.join(images)} are the registry's"
    if all(_pulled(image) for image in images):
        return f"base images {' and '.join(images)} pulled from their registry"
    digest = recipe_digest()
    saved = cache / f"standins-{digest}.tar.gz"
    said = (
        f"no image registry reachable: local stand-ins for {' and '.join(images)} "
        f"(docker/standins/: Debian packages, Maven Central)"
    )
    if all(label == digest for label in labels.values()):
        return f"{said}, built before"
    if saved.is_file():
        _checked("load", "--quiet", "--input", str(saved))
        return f"{said}, loaded from {saved}"
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="streamjoin-standins-") as work:
        _build_standins(Path(work), digest)
    partial = saved.with_suffix(".partial")
    with partial.open("wb") as out:
        saving = subprocess.Popen(["docker", "save", *images], stdout=subprocess.PIPE)
        zipped = subprocess.run(["gzip", "-1"], stdin=saving.stdout, stdout=out, check=False)
        if saving.wait() != 0 or zipped.returncode != 0:
            raise RuntimeError("docker save | gzip failed")
    partial.rename(saved)
    for older in cache.glob("standins-*.tar.gz"):
        if older != saved:
            older.unlink()
    return f"{said}, built now and saved to {saved}"
