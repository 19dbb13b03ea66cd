"""`App`: where users declare topics and joins; the worker and the Spark engine run them."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from streamjoin.dsl.fields import FieldMapping
from streamjoin.dsl.foreign_key import foreign_key_specs
from streamjoin.dsl.inputs import InputResolver
from streamjoin.dsl.spec import JOIN_KINDS, Joiner, JoinKind, JoinSpec, Repartition
from streamjoin.dsl.steps import KeyBy
from streamjoin.dsl.topics import GlobalTable, Stream, Table, Topic, make_topic
from streamjoin.dsl.windows import JoinWindows
from streamjoin.errors import ConfigurationError
from streamjoin.group.offset_reset import OffsetReset, check_policy
from streamjoin.kafka.security import KafkaSecurity
from streamjoin.runtime.admission import DEFAULT_MAX_FUTURE_MS, DEFAULT_MAX_RECORD_BYTES
from streamjoin.state.memory import DEFAULT_MEMORY_BUDGET_BYTES, RocksDBOptionsSetter, recent_share

__all__ = ("PROCESSING_GUARANTEES", "App", "AppSettings", "check_guarantee")

_APP_ID = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(slots=True)
class AppSettings:
    """Worker settings an app carries; the `streamjoin worker` options override them."""

    broker: str = "localhost:9092"
    security: KafkaSecurity = field(default_factory=KafkaSecurity)
    """TLS and SASL settings of every Kafka connection; the command line, STREAMJOIN_*
    environment variables and `--kafka-config` override them (README "Connecting to a secured
    cluster")."""
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
    auto_offset_reset: OffsetReset = "earliest"
    """Where an input partition resumes when the group has no committed offset for it, or
    when its committed offset is no longer in the log (retention deleted it while the app was
    down): earliest, latest, or none (stop with an error)."""
    broker_unavailable_timeout_s: float = 180.0
    """How long a worker keeps reconnecting to a broker that does not answer before it exits
    (non-zero, one line): long enough for a broker restart, short enough to be noticed."""
    num_standby_replicas: int = 0
    acceptable_recovery_lag: int = 10_000
    max_warmup_replicas: int = 2
    probing_rebalance_interval_s: float = 600.0
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES
    """Memory of all the worker's state stores together: RocksDB's block cache and write
    buffers, the window stores' newest records, and the fetched records waiting in the tasks'
    input buffers (README "Memory")."""
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
        check_policy(self.settings.auto_offset_reset)
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
        versioned: bool = False,
        history_ms: int | None = None,
    ) -> Table:
        """A compacted topic read as a table (latest value per key), for stream-table and
        table-table joins. `versioned=True` keeps `history_ms` of each key's values, and a
        stream record joins the value valid at its own timestamp (Kafka Streams' versioned
        stores, KIP-889/914)."""
        topic = make_topic(Table, name, value_type, key_type, partitions)
        if versioned:
            if isinstance(history_ms, bool) or not isinstance(history_ms, int) or history_ms < 1:
                raise ConfigurationError(
                    f"table {name!r}: versioned=True needs history_ms=<positive milliseconds>, "
                    f"got {history_ms!r}"
                )
            topic = Table(
                name, topic.key_serde, topic.value_serde, value_type, partitions, True, history_ms
            )
        elif history_ms is not None:
            raise ConfigurationError(f"table {name!r}: history_ms applies to versioned=True only")
        table = self._register(topic)
        assert isinstance(table, Table)
        return table

    def global_table(
        self,
        name: str,
        *,
        value_type: Any = dict,
        key_type: Any = str,
        partitions: int | None = None,
    ) -> GlobalTable:
        """A compacted topic that every worker reads whole into a local store (Kafka Streams'
        GlobalKTable): join it with `app.join(stream, table, key=...)`, no co-partitioning."""
        table = self._register(make_topic(GlobalTable, name, value_type, key_type, partitions))
        assert isinstance(table, GlobalTable)
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
        key: Callable[[Any], Any] | str | None = None,
        foreign_key: Callable[[Any], Any] | None = None,
    ) -> Callable[[Joiner], Joiner]:
        """Declare a join; the decorated function builds each output value from
        (left_value, right_value), either of which is None for a left/outer non-match.
        Either input may be a stream (`topic.filter(...)`, `.map_values(...)`, `.key_by(...)`);
        `into` may be the input of another join of this app. With a global table on the right,
        `key` (a function of the left value, or its field name) gives the table key to look up.
        `foreign_key` (two tables): the right table's key as a function of the left value (a
        foreign-key join, KIP-213)."""

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
            lookup = _lookup(join_name, left, right, key)
            output = into if isinstance(into, Topic) else self.topic(into, value_type=dict)
            if foreign_key is not None:
                self._register_foreign_key(
                    join_name,
                    left=left,
                    right=right,
                    how=how,
                    into=output,
                    joiner=joiner,
                    extract=foreign_key,
                )
                return joiner
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
                    lookup,
                )
                _check_join(spec)
            self._joins[join_name] = spec
            return joiner

        return register

    def _register_foreign_key(
        self,
        name: str,
        *,
        left: Topic | Stream,
        right: Topic | Stream,
        how: JoinKind,
        into: Topic,
        joiner: Joiner,
        extract: Callable[[Any], Any],
    ) -> None:
        if not isinstance(left, Topic) or not isinstance(right, Topic):
            raise ConfigurationError(
                f"join {name!r}: a foreign-key join joins two tables (app.table) without steps"
            )
        specs = foreign_key_specs(
            self.app_id,
            name,
            left=left,
            right=right,
            how=how,
            into=into,
            joiner=joiner,
            extract=extract,
        )
        for spec in specs:
            if spec.name in self._joins:
                raise ConfigurationError(
                    f"join {spec.name!r} is declared twice; give one of them name=..."
                )
            if spec.into.name in spec.input_topics:
                raise ConfigurationError(
                    f"join {name!r}: the output topic {spec.into.name!r} is also an input"
                )
        for spec in specs:
            self._joins[spec.name] = spec

    @property
    def foreign_key_topics(self) -> dict[str, str]:
        """Subscription and response topics of the foreign-key joins -> the table whose
        partition count they take (the right table's, the left table's)."""
        copies = {}
        for spec in self._joins.values():
            fk = spec.foreign_key
            if fk is not None and fk.side == "left":
                copies[fk.subscription.name] = fk.right_table.name
                copies[fk.response.name] = fk.left_table.name
        return copies


def _lookup(
    join: str, left: object, right: object, key: Callable[[Any], Any] | str | None
) -> KeyBy | None:
    """The global-table lookup of a join's `key=`, refusing it anywhere else."""
    where = f"join {join!r}"
    if isinstance(left, GlobalTable):
        raise ConfigurationError(
            f"{where}: global table {left.name!r} is on the left; a global table can only be "
            "the right side, joined by a stream"
        )
    if not isinstance(right, GlobalTable):
        if key is not None:
            raise ConfigurationError(
                f"{where}: key= applies only to a join with a global table (app.global_table)"
            )
        return None
    if isinstance(left, Table):
        raise ConfigurationError(
            f"{where}: global table {right.name!r} joins a stream (app.topic), not table "
            f"{left.name!r}"
        )
    if key is None:
        raise ConfigurationError(
            f"{where}: a join with global table {right.name!r} needs key=, a function of the "
            "stream value (or its field name) giving the table key to look up"
        )
    if not (callable(key) or (isinstance(key, str) and key)):
        raise ConfigurationError(
            f"{where}: key= takes a function of the stream value or a field name, got {key!r}"
        )
    return KeyBy(key, right.key_serde)


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
    if isinstance(spec.left, Table) and not isinstance(spec.right, Table):
        raise ConfigurationError(
            f"{where}: the left side must be a stream (app.topic) when the right is one; "
            "a table on the left joins only a table"
        )
    if spec.how not in JOIN_KINDS:
        raise ConfigurationError(f"{where}: how={spec.how!r}; use one of {', '.join(JOIN_KINDS)}")
    if spec.is_global:
        if spec.how == "outer":
            raise ConfigurationError(f"{where}: a global-table join is inner or left, not outer")
        if spec.window is not None:
            raise ConfigurationError(f"{where}: a global-table join takes no window")
    elif spec.is_table_table:
        if spec.window is not None:
            raise ConfigurationError(f"{where}: a table-table join takes no window")
        if spec.has_versioned_table:
            raise ConfigurationError(
                f"{where}: a versioned table joins a stream (as of the stream record's time); "
                "join tables declared without versioned=True"
            )
    elif spec.is_stream_table:
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
