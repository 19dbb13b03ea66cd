"""The compose file's two base images, `python:3.11-slim` and `apache/kafka:<release>`: pulled
from their registry, or, where none is reachable (as on the project's machines), local stand-ins
built under the same names from Debian's packages and Maven Central only.

The python stand-in is made by one mmdebstrap run: Debian bookworm (minbase) with Debian's
Python 3.11, pip and the C headers, the host's certificate authorities, apt set up and without
package lists as in the official images (standins/debian/). The apache/kafka stand-in is built
on it (standins/kafka.Dockerfile: OpenJDK 17 from Debian, the release's broker jars that `make
kafka-jars` fetched, kafka-tools for the image's tools), so it can be built while the streamjoin
image compiles. Each stand-in carries the label `STANDIN_LABEL` with a digest of its recipe
(this file, standins/, the release); the pair is saved under that digest in
~/.cache/streamjoin/docker/, loaded from there next time, and rebuilt when the recipe changes.

mmdebstrap runs with its eatmydata hooks (dpkg's fsyncs skipped: it took half the time under
load) and writes a directory, packed for `docker import` and removed later (`keep`, beside the
demo): mmdebstrap's own removal of its tree took as long as packing it.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from streamjoin.broker.kafka_jars import fetch_kafka_jars, kafka_version
from streamjoin.maven_jars import cache_dir, copy_dependencies

__all__ = ("STANDIN_LABEL", "BaseImages", "base_images", "recipe_digest")

RECIPE = Path(__file__).resolve().parent / "standins"
STANDIN_LABEL = "org.streamjoin.standin"
_MIRROR = "http://deb.debian.org/debian"
_EATMYDATA = Path("/usr/share/mmdebstrap/hooks/eatmydata")
_HOST_CAS = Path("/usr/local/share/ca-certificates")
_PULL_TIMEOUT_S = 300
_PYTHON_PACKAGES = ("ca-certificates", "python3", "python3-pip", "python3-dev", "python-is-python3")
"""Debian's Python 3.11 with pip and the C headers (the official image has them too)."""
_PYTHON_IMAGE = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LANG=C.UTF-8",
    'CMD ["python3"]',
)
"""The official image's settings that its users rely on."""


def base_images() -> tuple[str, str]:
    """The Dockerfile's base image and the compose file's Kafka image."""
    return "python:3.11-slim", f"apache/kafka:{kafka_version()}"


def recipe_digest() -> str:
    """A digest of everything a stand-in is built from."""
    digest = hashlib.sha256(kafka_version().encode() + Path(__file__).read_bytes())
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


def _ensure_mmdebstrap() -> None:
    if shutil.which("mmdebstrap") is not None:
        return
    installed = subprocess.run(
        ["apt-get", "install", "-y", "-qq", "mmdebstrap"],
        capture_output=True,
        text=True,
        check=False,
    )
    if installed.returncode != 0:
        raise RuntimeError(f"apt-get install mmdebstrap failed: {installed.stderr.strip()}")


def _python_standin(image: str, digest: str, work: Path) -> None:
    """Debian bookworm with Python by mmdebstrap, imported as `image`."""
    _ensure_mmdebstrap()
    cas = work / "ca"
    cas.mkdir()
    for certificate in _HOST_CAS.rglob("*.crt") if _HOST_CAS.is_dir() else ():
        shutil.copy(certificate, cas / certificate.name)
    root = work / "root"
    hooks = [f"--hook-dir={_EATMYDATA}"] if _EATMYDATA.is_dir() else []
    bootstrapped = subprocess.run(
        ["mmdebstrap", "--quiet", "--variant=minbase", *hooks,
         f"--include={','.join(_PYTHON_PACKAGES)}",
         # The host's certificate authorities (a TLS-inspecting proxy's, say): pip in an image
         # build reaches PyPI as the host does. Python as the official image leaves it: pip
         # free to install system-wide.
         # apt and dpkg set up as in Debian's official images (standins/debian/).
         f'--customize-hook=cp -r {shlex.quote(str(RECIPE / "debian"))}/. "$1/"',
         f'--customize-hook=cp -r {shlex.quote(str(cas))}/. "$1/usr/local/share/ca-certificates/"',
         '--customize-hook=chroot "$1" update-ca-certificates',
         '--customize-hook=rm -f "$1"/usr/lib/python3.*/EXTERNALLY-MANAGED',
         "--format=directory", "bookworm", str(root), _MIRROR],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if bootstrapped.returncode != 0:
        tail = "\n".join(bootstrapped.stderr.strip().splitlines()[-10:])
        raise RuntimeError(f"mmdebstrap failed:\n{tail}")
    changes = [arg for change in (*_PYTHON_IMAGE, f"LABEL {STANDIN_LABEL}={digest}")
               for arg in ("--change", change)]  # fmt: skip
    with subprocess.Popen(
        ["tar", "--create", "--numeric-owner", "--xattrs", "--directory", str(root),
         "--exclude=./dev/*", "."],
        stdout=subprocess.PIPE,
    ) as packed:  # fmt: skip
        imported = subprocess.run(
            ["docker", "import", *changes, "-", image],
            stdin=packed.stdout, capture_output=True, text=True, check=False,
        )  # fmt: skip
    if packed.returncode != 0 or imported.returncode != 0:
        raise RuntimeError(f"tar | docker import failed: {imported.stderr.strip()}")


def _kafka_standin(image: str, digest: str, work: Path) -> None:
    """OpenJDK 17 and the release's jars on the python stand-in (standins/kafka.Dockerfile)."""
    tools = copy_dependencies(
        RECIPE / "kafka" / "pom.xml",
        cache_dir(f"kafka-tools-{kafka_version()}"),
        f"kafka-tools {kafka_version()}, for the apache/kafka stand-in's tools",
        {"kafka.version": kafka_version()},
    )
    context = work / "kafka"
    libs = context / "libs"
    shutil.copytree(fetch_kafka_jars(), libs, ignore=shutil.ignore_patterns(".*"))
    shutil.copytree(tools, libs, ignore=shutil.ignore_patterns(".*"), dirs_exist_ok=True)
    shutil.copytree(RECIPE / "kafka", context / "kafka", ignore=shutil.ignore_patterns("pom.xml"))
    _checked(
        "build", "--label", f"{STANDIN_LABEL}={digest}", "--tag", image,
        "--file", str(RECIPE / "kafka.Dockerfile"), str(context),
    )  # fmt: skip


class BaseImages:
    """Provides the two base images in two steps, so that the streamjoin image can be built
    (on the first) while the second is provided. Each step returns one line saying where its
    image came from; `keep` saves stand-ins built now for the next run."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.digest = recipe_digest()
        self.saved = cache / f"standins-{self.digest}.tar"
        self._standins = False
        self._built: list[str] = []
        self._work = Path(tempfile.mkdtemp(prefix="streamjoin-standins-"))

    def first(self) -> str:
        """python:3.11-slim, and whether the registry answers (else both are stand-ins)."""
        python, kafka = base_images()
        if _label(python) == "" or _pulled(python):
            return f"base image {python} is the registry's"
        self._standins = True
        said = (
            f"no image registry reachable: local stand-ins for {python} and {kafka} "
            f"(docker/standins/: Debian packages, Maven Central)"
        )
        if _label(python) == self.digest:
            return f"{said}; {python} built before"
        if self.saved.is_file():
            _checked("load", "--quiet", "--input", str(self.saved))
            return f"{said}; loaded from {self.saved}"
        started = time.monotonic()
        _python_standin(python, self.digest, self._work)
        self._built.append(python)
        return f"{said}; {python} built in {time.monotonic() - started:.0f} s"

    def second_ready(self) -> bool:
        """Whether apache/kafka is here already (then `second` has nothing to do)."""
        return _label(base_images()[1]) == (self.digest if self._standins else "")

    def second(self) -> str:
        """apache/kafka: pulled when python was, else a stand-in (built on python's)."""
        _, kafka = base_images()
        if not self._standins:
            if _label(kafka) == "" or _pulled(kafka):
                return f"base image {kafka} is the registry's"
            raise RuntimeError(f"{kafka} could not be pulled, although python:3.11-slim was")
        if _label(kafka) == self.digest:
            return f"{kafka} stand-in built before"
        started = time.monotonic()
        _kafka_standin(kafka, self.digest, self._work)
        self._built.append(kafka)
        return f"{kafka} stand-in built in {time.monotonic() - started:.0f} s"

    def keep(self) -> str | None:
        """Save the stand-ins built now (both: they share their layers) for the next run and
        remove the build's files (slow: run it beside the demo); None when nothing was built."""
        shutil.rmtree(self._work, ignore_errors=True)
        if not self._built:
            return None
        self.cache.mkdir(parents=True, exist_ok=True)
        partial = self.saved.with_suffix(".partial")
        _checked("save", "--output", str(partial), *base_images())
        partial.rename(self.saved)
        for older in self.cache.glob("standins-*.tar*"):
            if older != self.saved:
                older.unlink()
        return f"stand-ins saved to {self.saved}"
