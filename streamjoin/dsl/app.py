"""`App`: where users declare topics and joins; the worker and the Spark engine run them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from streamjoin.dsl.fields import FieldMapping
from streamjoin.dsl.inputs import InputResolver
from streamjoin.dsl.spec import JOIN_KINDS, Joiner, JoinKind, JoinSpec, Repartition
from streamjoin.dsl.topics import Stream, Table, Topic, make_topic
from streamjoin.dsl.windows import JoinWindows
from streamjoin.errors import ConfigurationError
from streamjoin.runtime.admission import DEFAULT_MAX_FUTURE_MS, DEFAULT_MAX_RECORD_BYTES
from streamjoin.state.memory import DEFAULT_MEMORY_BUDGET_BYTES, RocksDBOptionsSetter, recent_share

__all__ = ("PROCESSING_GUARANTEES", "App", "AppSettings", "check_guarantee")

_APP_ID = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(slots=True)
class AppSettings:
    """Worker settings an app carries; the `streamjoin worker` options override them."""

    broker: str = "localhost:9092"
    state_dir: Path = Path("./state")
    commit_interval_s: float = 5.0
    processing_guarantee: Literal["at_least_once", "exactly_once"] = "at_least_once"
    """exactly_once: each commit interval is one Kafka transaction (outputs, changelogs, input
    offsets), so no output repeats after a crash (README "Processing guarantees")."""
    max_task_idle_ms: int = 0
    """How long a task waits for new data on a caught-up, empty input (Kafka's default 0)."""
    on_error: Literal["dlq", "fail"] = "dlq"
    max_future_ms: int = DEFAULT_MAX_FUTURE_MS
    """A record stamped further ahead of the wall clock than this is a bad record: it would
    move stream time into the future and make every later record late."""
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES
    """An input record (key and value) or a joined value larger than this is a bad record: the
    broker would refuse it in a changelog or an output. Raise it together with the topics'
    `max.message.bytes`."""
    broker_unavailable_timeout_s: float = 180.0
    """How long a worker keeps reconnecting to a broker that does not answer before it exits
    (non-zero, one line): long enough for a broker restart, short enough to be noticed."""
    num_standby_replicas: int = 0
    acceptable_recovery_lag: int = 10_000
    max_warmup_replicas: int = 2
    probing_rebalance_interval_s: float = 600.0
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES
    """Memory of all the worker's state stores together: RocksDB's block cache and write
    buffers, and the window stores' newest records (README "Memory")."""
    window_memory_bytes: int | None = None
    """Of the budget, what the window stores' newest records may take, all stores together:
    a join reads its matches there without RocksDB (default half; 0: always read RocksDB)."""
    rocksdb_options: RocksDBOptionsSetter | None = None
    """`(store_name, options, table_options) -> None`, to tune each store's RocksDB options
    (as Kafka Streams' rocksdb.config.setter)."""


class App:
    """A stream-join application: its id names the consumer group, the state directory and the
    internal topics (changelogs `<app_id>-<store>-changelog`, repartition topics
    `<app_id>-<name>-repartition`, dead letters `<app_id>-dlq`)."""

    def __init__(self, app_id: str, *, broker: str = "localhost:9092", **settings: Any) -> None:
        if not _APP_ID.match(app_id or ""):
            raise ConfigurationError(
                f"app id {app_id!r} must be non-empty letters, digits, '.', '_' or '-' "
                "(it names Kafka topics and a consumer group)"
            )
        self.app_id = app_id
        try:
            self.settings = AppSettings(broker=broker, **settings)
        except TypeError as exc:
            raise ConfigurationError(f"App({app_id!r}): {exc}") from None
        _check_memory(self.settings)
        check_guarantee(self.settings.processing_guarantee)
        self._topics: dict[str, Topic] = {}
        self._joins: dict[str, JoinSpec] = {}
        self._inputs = InputResolver(app_id)

    @property
    def joins(self) -> tuple[JoinSpec, ...]:
        return tuple(self._joins.values())

    @property
    def repartitions(self) -> tuple[Repartition, ...]:
        """The `key_by` steps the joins read through, in name order."""
        read = {t for spec in self._joins.values() for t in spec.input_topics}
        read |= {r.source.name for r in self._inputs.by_name.values()}
        return tuple(r for _, r in sorted(self._inputs.by_name.items()) if r.topic.name in read)

    def get_join(self, name: str) -> JoinSpec:
        try:
            return self._joins[name]
        except KeyError:
            known = ", ".join(sorted(self._joins)) or "none"
            raise ConfigurationError(
                f"app {self.app_id!r} has no join {name!r} (joins: {known})"
            ) from None

    def topic(
        self,
        name: str,
        *,
        value_type: Any = dict,
        key_type: Any = str,
        partitions: int | None = None,
    ) -> Topic:
        """A stream topic; `value_type`: bytes, str, dict (JSON), a dataclass or a faust.Record."""
        return self._register(make_topic(Topic, name, value_type, key_type, partitions))

    def table(
        self,
        name: str,
        *,
        value_type: Any = dict,
        key_type: Any = str,
        partitions: int | None = None,
    ) -> Table:
        """A compacted topic read as a table (latest value per key) for stream-table joins."""
        table = self._register(make_topic(Table, name, value_type, key_type, partitions))
        assert isinstance(table, Table)
        return table

    def _register(self, topic: Topic) -> Topic:
        known = self._topics.get(topic.name)
        if known is not None and type(known) is not type(topic):
            raise ConfigurationError(
                f"{topic.name!r} is declared both as a {type(known).__name__.lower()} and as a "
                f"{type(topic).__name__.lower()}"
            )
        self._topics[topic.name] = topic
        return topic

    def join(
        self,
        left: Topic | Stream,
        right: Topic | Stream,
        *,
        into: str | Topic,
        window: JoinWindows | None = None,
        how: JoinKind = "inner",
        name: str | None = None,
    ) -> Callable[[Joiner], Joiner]:
        """Declare a join; the decorated function builds each output value from
        (left_value, right_value), either of which is None for a left/outer non-match.
        Either input may be a stream (`topic.filter(...)`, `.map_values(...)`, `.key_by(...)`);
        `into` may be the input of another join of this app."""

        def register(joiner: Joiner) -> Joiner:
            join_name = name or str(getattr(joiner, "__name__", ""))
            if join_name in self._joins:
                raise ConfigurationError(
                    f"join {join_name!r} is declared twice; give one of them name=..."
                )
            _check_name(join_name, joiner)
            for side, declared in (("left", left), ("right", right)):
                if not isinstance(declared, Topic | Stream):
                    raise ConfigurationError(
                        f"join {join_name!r}: the {side} side must come from app.topic(), "
                        "app.table() or a stream made from one (filter, map_values, key_by)"
                    )
            if not isinstance(into, str | Topic) or isinstance(into, Table):
                raise ConfigurationError(
                    f"join {join_name!r}: into= takes a topic name or an app.topic()"
                )
            output = into if isinstance(into, Topic) else self.topic(into, value_type=dict)
            with self._inputs.undone_on_error():
                left_topic, left_steps = self._inputs.resolve(left, join_name, "left")
                right_topic, right_steps = self._inputs.resolve(right, join_name, "right")
                spec = JoinSpec(
                    join_name,
                    left_topic,
                    right_topic,
                    how,
                    output,
                    joiner,
                    window,
                    left_steps,
                    right_steps,
                )
                _check_join(spec)
            self._joins[join_name] = spec
            return joiner

        return register


PROCESSING_GUARANTEES = ("at_least_once", "exactly_once")


def check_guarantee(guarantee: str) -> None:
    if guarantee not in PROCESSING_GUARANTEES:
        raise ConfigurationError(
            f"processing guarantee {guarantee!r}: use at_least_once or exactly_once"
        )


def _check_memory(settings: AppSettings) -> None:
    recent_share(settings.memory_budget_bytes, settings.window_memory_bytes)
    if settings.rocksdb_options is not None and not callable(settings.rocksdb_options):
        raise ConfigurationError(
            "rocksdb_options must be a callable (store_name, options, table_options) -> None"
        )


def _check_name(name: str, joiner: Joiner) -> None:
    if not name and isinstance(joiner, FieldMapping):
        raise ConfigurationError(
            "a join built from fields(...) needs a name: app.join(..., name=...)"
        )
    if not _APP_ID.match(name):
        raise ConfigurationError(
            f"join {name!r}: the name must be letters, digits, '.', '_' or '-'"
        )


def _check_join(spec: JoinSpec) -> None:
    """Refuse a join the engines cannot run, saying which argument is wrong."""
    where = f"join {spec.name!r}"
    if not callable(spec.joiner):
        raise ConfigurationError(f"{where}: the joiner must be callable")
    if isinstance(spec.joiner, FieldMapping):
        spec.joiner.check_output(spec.into.value_type, where)
    for side, topic in (("left", spec.left), ("right", spec.right)):
        if not isinstance(topic, Topic):
            raise ConfigurationError(
                f"{where}: the {side} side must come from app.topic() or app.table()"
            )
    if isinstance(spec.left, Table):
        raise ConfigurationError(
            f"{where}: the left side must be a stream (app.topic), not a table"
        )
    if spec.how not in JOIN_KINDS:
        raise ConfigurationError(f"{where}: how={spec.how!r}; use one of {', '.join(JOIN_KINDS)}")
    if spec.is_stream_table:
        if spec.how == "outer":
            raise ConfigurationError(f"{where}: a stream-table join is inner or left, not outer")
        if spec.window is not None:
            raise ConfigurationError(f"{where}: a stream-table join takes no window")
    elif not isinstance(spec.window, JoinWindows):
        raise ConfigurationError(f"{where}: a stream-stream join needs window=JoinWindows(...)")
    if spec.left.name == spec.right.name:
        raise ConfigurationError(
            f"{where}: joining {spec.left.name!r} with itself is not supported"
        )
    if spec.into.name in spec.input_topics:
        raise ConfigurationError(f"{where}: the output topic {spec.into.name!r} is also an input")
