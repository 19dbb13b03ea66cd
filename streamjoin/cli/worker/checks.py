"""What `streamjoin worker` settles before it touches Kafka (local settings that would fail
later, with consumers and producers already open), and `--create-topics`."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

from streamjoin.dsl.app import App
from streamjoin.dsl.topics import Topic
from streamjoin.errors import ConfigurationError
from streamjoin.kafka.admin import open_admin
from streamjoin.kafka.connection import KafkaTarget
from streamjoin.kafka.topics import TopicSpec, ensure_topics, partition_counts

__all__ = ("check_port", "check_state_dir", "create_missing_inputs")


def check_state_dir(state_dir: Path, app_id: str) -> None:
    """Create `<state_dir>/<app_id>` (the worker would) and check it can be written."""
    directory = state_dir / app_id
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocking = next(
            (p for p in (directory, *directory.parents) if p.exists() and not p.is_dir()), None
        )
        raise ConfigurationError(
            f"--state-dir {state_dir}: {blocking or directory} is a file, not a directory"
        ) from None
    except OSError as exc:
        raise ConfigurationError(
            f"--state-dir {state_dir}: cannot create {directory} ({exc.strerror})"
        ) from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigurationError(f"--state-dir {state_dir}: {directory} is not writable")


def check_port(option: str, port: int, host: str = "0.0.0.0") -> None:
    """Refuse a port outside 1-65535, one that something already listens on, or a host
    address this machine cannot listen on (`option`: --metrics-port, --query-port)."""
    host_option = option.replace("-port", "-host")
    if not 0 < port < 65536:
        raise ConfigurationError(f"{option} {port}: give a port from 1 to 65535")
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    except (OSError, UnicodeError) as exc:
        raise ConfigurationError(f"{host_option} {host}: {exc}") from None
    with socket.socket(family) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                reason = "the port is already in use; pick another one"
                raise ConfigurationError(f"{option} {port}: {reason}") from None
            reason = f"cannot listen on {host}:{port} ({exc.strerror})"
            raise ConfigurationError(f"{host_option} {host}: {reason}") from None


def check_advertised_metrics_url(
    url: str | None, metrics_port: int | None, supervised: bool
) -> None:
    """A URL, and one that something serves: this worker's endpoint, or (a process of
    `--processes`) its supervisor's."""
    if url is None:
        return
    if metrics_port is None and not supervised:
        raise ConfigurationError("--advertised-metrics-url needs --metrics-port (no endpoint)")
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError(f"--advertised-metrics-url {url!r}: give a URL, http://host:port")


async def create_missing_inputs(app: App, bootstrap: KafkaTarget) -> None:
    """Create the app's source topics that do not exist (not the ones it writes itself:
    repartition topics and join outputs), with the partition count the app declares for them
    or, failing that, that of the other side of the join that reads them."""
    async with open_admin(bootstrap) as admin:
        counts = await partition_counts(admin)
    written = {r.topic.name for r in app.repartitions} | {s.into.name for s in app.joins}
    readers: list[tuple[str, tuple[Topic, ...]]] = [
        (f"join {spec.name!r}", (spec.left, spec.right)) for spec in app.joins
    ]
    readers += [(f"key_by {r.name!r}", (r.source,)) for r in app.repartitions]
    wanted: dict[str, TopicSpec] = {}
    problems: list[str] = []
    for reader, sides in readers:
        known = [t.partitions for t in sides if t.partitions is not None]
        known += [counts[t.name] for t in sides if t.name in counts]
        for topic in sides:
            if topic.name in counts or topic.name in wanted or topic.name in written:
                continue
            partitions = topic.partitions or (known[0] if known else None)
            if partitions is None:
                problems.append(
                    f"{reader}: cannot create input topic {topic.name!r}, neither it nor its "
                    f"other side declares a partition count; declare one "
                    f"(`topic({topic.name!r}, ..., partitions=N)`) or run "
                    f"`streamjoin topics create {topic.name} --partitions N`"
                )
            else:
                wanted[topic.name] = TopicSpec(topic.name, partitions, purpose="input topic")
    if problems:
        raise ConfigurationError("; ".join(problems))
    await ensure_topics(bootstrap, wanted.values())
