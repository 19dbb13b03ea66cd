"""`AppSettings`: the worker settings an app carries (the `streamjoin worker` options override
them), and the checks that refuse settings no worker could run with."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from streamjoin.errors import ConfigurationError
from streamjoin.kafka.offset_policy import OffsetReset, check_policy
from streamjoin.kafka.security import KafkaSecurity
from streamjoin.memory_settings import (
    DEFAULT_MEMORY_BUDGET_BYTES,
    RocksDBOptionsSetter,
    recent_share,
)

__all__ = (
    "DEFAULT_MAX_FUTURE_MS",
    "DEFAULT_MAX_RECORD_BYTES",
    "PROCESSING_GUARANTEES",
    "AppSettings",
    "check_guarantee",
    "check_settings",
)

DEFAULT_MAX_FUTURE_MS = 3_600_000
"""One hour: Apache Kafka 4's brokers refuse records further ahead than that by default
(`log.message.timestamp.after.max.ms`), so a record past it was stamped by a broken clock."""

DEFAULT_MAX_RECORD_BYTES = 1_000_000
"""Key and value: under Kafka's default limit of 1 MiB per message, with room for headers."""


@dataclass(slots=True)
class AppSettings:
    """Worker settings an app carries; the `streamjoin worker` options override them."""

    broker: str = "localhost:9092"
    """Kafka bootstrap servers, HOST:PORT[,HOST:PORT...]."""
    security: KafkaSecurity = field(default_factory=KafkaSecurity)
    """TLS and SASL settings of every Kafka connection; the command line, STREAMJOIN_*
    environment variables and `--kafka-config` override them (docs/security.md)."""
    state_dir: Path = Path("./state")
    """Where task state lives: `<state_dir>/<app_id>/<task>/<store>` (RocksDB) and checkpoints."""
    commit_interval_s: float = 5.0
    """Seconds between commits: outputs and changelogs flushed, checkpoints written, input
    offsets committed (under exactly-once: one transaction each)."""
    processing_guarantee: Literal["at_least_once", "exactly_once"] = "at_least_once"
    """exactly_once: each commit interval is one Kafka transaction (outputs, changelogs, input
    offsets), so no output repeats after a crash (docs/guarantees.md)."""
    max_task_idle_ms: int = 0
    """How long a task waits for new data on a caught-up, empty input (Kafka's default 0)."""
    on_error: Literal["dlq", "fail"] = "dlq"
    """What a bad record does: dlq sends it to the dead-letter topic `<app_id>-dlq` with the
    error in its headers and goes on; fail stops the worker."""
    max_future_ms: int = DEFAULT_MAX_FUTURE_MS
    """A record stamped further ahead of the wall clock than this is a bad record: it would
    move stream time into the future and make every later record late."""
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    """An input record (key and value) or a joined value larger than this is a bad record: the
    broker would refuse it in a changelog or an output. Raise it together with the topics'
    `max.message.bytes`."""
    auto_offset_reset: OffsetReset = "earliest"
    """Where an input partition resumes when the group has no committed offset for it, or
    when its committed offset is no longer in the log (retention deleted it while the app was
    down): earliest, latest, or none (stop with an error)."""
    broker_unavailable_timeout_s: float = 180.0
    """How long a worker keeps reconnecting to a broker that does not answer before it exits
    (non-zero, one line): long enough for a broker restart, short enough to be noticed."""
    num_standby_replicas: int = 0
    """Hot standbys per stateful task: other workers that keep a copy of its state up to date,
    so a failover or a move restores little."""
    acceptable_recovery_lag: int = 10_000
    """Changelog records behind its end at which a copy counts as caught up: an active may
    move to it at once, and a learner this close asks for the follow-up rebalance."""
    max_warmup_replicas: int = 2
    """Learners restoring state at the same time, group-wide (KIP-441's max.warmup.replicas)."""
    probing_rebalance_interval_s: float = 600.0
    """Seconds between probing rebalances, the fallback that promotes learners which caught up
    when no follow-up was asked for."""
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES
    """Memory of all the worker's state stores together: RocksDB's block cache and write
    buffers, the window stores' newest records, the joins' pending non-matches held in memory,
    and the fetched records waiting in the tasks' input buffers (docs/workers.md, "Memory")."""
    window_memory_bytes: int | None = None
    """Of the budget, what the window stores' newest records may take, all stores together:
    a join reads its matches there without RocksDB (default five sixteenths; 0: always read
    RocksDB)."""
    rocksdb_options: RocksDBOptionsSetter | None = None
    """`(store_name, options, table_options) -> None`, to tune each store's RocksDB options
    (as Kafka Streams' rocksdb.config.setter)."""


PROCESSING_GUARANTEES = ("at_least_once", "exactly_once")


def check_guarantee(guarantee: str) -> None:
    if guarantee not in PROCESSING_GUARANTEES:
        raise ConfigurationError(
            f"processing guarantee {guarantee!r}: use at_least_once or exactly_once"
        )


def check_settings(settings: AppSettings) -> None:
    """Refuse settings no worker could run with, in one line each."""
    recent_share(settings.memory_budget_bytes, settings.window_memory_bytes)
    if settings.rocksdb_options is not None and not callable(settings.rocksdb_options):
        raise ConfigurationError(
            "rocksdb_options must be a callable (store_name, options, table_options) -> None"
        )
    check_policy(settings.auto_offset_reset)
    check_guarantee(settings.processing_guarantee)
