"""`App`: where users declare topics and joins; the worker and the Spark engine run them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamjoin.dsl.foreign_key import foreign_key_specs
from streamjoin.dsl.inputs import InputResolver
from streamjoin.dsl.settings import AppSettings, check_settings
from streamjoin.dsl.spec import Joiner, JoinKind, JoinSpec, Repartition
from streamjoin.dsl.topics import GlobalTable, Stream, Table, Topic, make_topic
from streamjoin.dsl.validation import NAME, check_join, check_name, global_lookup
from streamjoin.dsl.windows import JoinWindows
from streamjoin.errors import ConfigurationError

__all__ = ("App",)


class App:
    """A stream-join application: its id names the consumer group, the state directory and the
    internal topics (changelogs `<app_id>-<store>-changelog`, repartition topics
    `<app_id>-<name>-repartition`, dead letters `<app_id>-dlq`)."""

    def __init__(self, app_id: str, *, broker: str = "localhost:9092", **settings: Any) -> None:
        if not NAME.match(app_id or ""):
            raise ConfigurationError(
                f"app id {app_id!r} must be non-empty letters, digits, '.', '_' or '-' "
                "(it names Kafka topics and a consumer group)"
            )
        self.app_id = app_id
        try:
            self.settings = AppSettings(broker=broker, **settings)
        except TypeError as exc:
            raise ConfigurationError(f"App({app_id!r}): {exc}") from None
        check_settings(self.settings)
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
            check_name(join_name, joiner)
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
            lookup = global_lookup(join_name, left, right, key)
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
                check_join(spec)
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
