"""Turn a join input as declared (a topic, or a stream after filter/map_values/key_by) into what
the join's tasks read: a topic plus the steps they run, with a repartition sub-topology in front
for every `key_by` on the way."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from streamjoin.dsl.spec import Repartition, repartition_topic
from streamjoin.dsl.steps import KeyBy, Step
from streamjoin.dsl.topics import Stream, Topic
from streamjoin.errors import ConfigurationError

__all__ = ("InputResolver",)

_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


class InputResolver:
    """An app's repartitions, by `key_by` (one `key_by` object read by two joins is one
    repartition topic) and by name (two different `key_by`s may not share a name)."""

    def __init__(self, app_id: str) -> None:
        self.app_id = app_id
        self._by_step: dict[KeyBy, Repartition] = {}
        self.by_name: dict[str, Repartition] = {}

    @contextmanager
    def undone_on_error(self) -> Iterator[None]:
        """Forget the repartitions made inside when it raises (a join refused after its
        inputs were resolved leaves no name taken)."""
        before = set(self.by_name)
        try:
            yield
        except BaseException:
            for name in set(self.by_name) - before:
                del self._by_step[self.by_name.pop(name).key_by]
            raise

    def resolve(
        self, declared: Topic | Stream, join: str, side: str
    ) -> tuple[Topic, tuple[Step, ...]]:
        """(the topic the join task reads, the steps it runs on its records)."""
        if isinstance(declared, Topic):
            return declared, ()
        steps = declared.steps
        last = max((i for i, s in enumerate(steps) if isinstance(s, KeyBy)), default=None)
        if last is None:
            return declared.source, steps
        repartition = self._repartition(declared.source, steps[: last + 1], join, side, "")
        return repartition.topic, steps[last + 1 :]

    def _repartition(
        self, source: Topic, steps: tuple[Step, ...], join: str, side: str, suffix: str
    ) -> Repartition:
        key_by = steps[-1]
        assert isinstance(key_by, KeyBy)
        known = self._by_step.get(key_by)
        if known is not None:
            return known
        earlier = max((i for i, s in enumerate(steps[:-1]) if isinstance(s, KeyBy)), default=None)
        read, before = source, steps[:-1]
        if earlier is not None:  # key_by(...)...key_by(...): one repartition after another
            inner = self._repartition(
                source, steps[: earlier + 1], join, side, f"{suffix}-{earlier}"
            )
            read, before = inner.topic, steps[earlier + 1 : -1]
        name = key_by.name or f"{join}-{side}{suffix}"
        if not _NAME.match(name):
            raise ConfigurationError(
                f"key_by name {name!r} must be letters, digits, '.', '_' or '-' (it names a topic)"
            )
        if name in self.by_name:
            raise ConfigurationError(
                f"two different key_by steps are named {name!r} (for joins "
                f"{self.by_name[name].join!r} and {join!r}); give one of them another name=..."
            )
        value_serde, value_type = read.value_serde, read.value_type
        for step in before:
            value_serde = getattr(step, "value_serde", value_serde)
            value_type = getattr(step, "value_type", value_type)
        topic = Topic(
            repartition_topic(self.app_id, name),
            key_by.key_serde,
            value_serde,
            value_type,
            key_by.partitions,
        )
        repartition = Repartition(name, read, before, key_by, topic, join, side)
        self._by_step[key_by] = self.by_name[name] = repartition
        return repartition
