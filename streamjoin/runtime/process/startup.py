"""What a worker does before it joins its group: say how it runs, check the app's topics
against the broker, build its topology, make the changelogs and restore the global tables.

The first connection waits for a broker that is slow to answer (a loaded machine, a broker
still starting): an attempt that times out is tried again, with one warning, for as long as the
worker would wait for a broker lost while running (`--broker-unavailable-timeout`). A refused
connection, a failed TLS handshake or a failed authentication still fail at once: waiting
would not change them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from aiokafka.errors import KafkaError

from streamjoin.compiled import build_description
from streamjoin.dsl.app import App
from streamjoin.dsl.topology import Topology
from streamjoin.kafka.admin import BrokerUnreachable
from streamjoin.kafka.connect_errors import in_words
from streamjoin.kafka.connection import KafkaConnection
from streamjoin.runtime.tasks.global_tables import GlobalTables
from streamjoin.runtime.topology.app_topology import AppTopology, store_specs
from streamjoin.runtime.topology.topic_check import check_topics
from streamjoin.state.changelog_topics import ensure_changelogs
from streamjoin.state.layout import StateDirectory
from streamjoin.state.memory import MemoryBudget, return_freed_memory_promptly

__all__ = ("Prepared", "prepare")

logger = logging.getLogger(__name__)

_RETRY_AFTER_S = 1.0


@dataclass(frozen=True, slots=True)
class Prepared:
    compiled: Topology
    topology: AppTopology
    global_tables: GlobalTables
    """Restored to their topics' ends (the caller closes them)."""


async def prepare(
    app: App,
    kafka: KafkaConnection,
    *,
    state_dir: Path,
    memory: MemoryBudget,
    process: int | None,
) -> Prepared:
    """`process`: the worker's index among its host's `--processes`, if supervised."""
    logger.info("per-record path: %s", build_description())
    logger.info("%s", memory.describe())
    logger.info("kafka at %s: %s", kafka.bootstrap, kafka.security.describe())
    return_freed_memory_promptly()
    compiled = await checked_topics(app, kafka, app.settings.broker_unavailable_timeout_s)
    partitions = {name: count or 0 for name, count in compiled.tasks.items()}
    global_tables = GlobalTables(
        {
            spec.right.name: compiled.partitions[spec.right.name] or 0
            for spec in app.joins
            if spec.is_global
        },
        StateDirectory(state_dir, app.app_id),
        memory,
        kafka,
        process=process,
    )
    await ensure_changelogs(
        kafka,
        app.app_id,
        {store: partitions[spec.name] for spec in app.joins for store in store_specs(spec)},
    )
    await global_tables.start()  # restored before any task runs
    return Prepared(compiled, AppTopology(app, partitions), global_tables)


async def checked_topics(app: App, kafka: KafkaConnection, give_up_after_s: float) -> Topology:
    """`check_topics`, tried again while the broker's answers time out (or come back with a
    retriable error, as a broker's first answers after a stall may), up to `give_up_after_s`;
    then BrokerUnreachable goes up."""
    started = time.monotonic()
    waited = False
    while True:
        try:
            compiled = await check_topics(app, kafka)
        except (BrokerUnreachable, KafkaError) as exc:
            # A broker just back answers its first requests oddly (metadata without brokers).
            slow = exc.timed_out if isinstance(exc, BrokerUnreachable) else exc.retriable
            if not slow:
                raise
            if time.monotonic() - started + _RETRY_AFTER_S >= give_up_after_s:
                if isinstance(exc, BrokerUnreachable):
                    raise
                raise BrokerUnreachable(kafka.bootstrap, in_words(exc)) from exc
            if not waited:
                waited = True
                logger.warning(
                    "broker at %s does not answer yet (%s); waiting for it up to %.0f s "
                    "(--broker-unavailable-timeout)",
                    kafka.bootstrap,
                    "timed out" if isinstance(exc, BrokerUnreachable) else in_words(exc),
                    give_up_after_s,
                )
            await asyncio.sleep(_RETRY_AFTER_S)
            continue
        if waited:
            logger.info(
                "broker at %s answers after %.0f s", kafka.bootstrap, time.monotonic() - started
            )
        return compiled
