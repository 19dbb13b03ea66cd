"""A CooperativeConsumer in a process of its own, for tests that kill a member without warning.

Usage: python member_process.py BOOTSTRAP GROUP TOPIC ASSIGNOR SESSION_MS HEARTBEAT_MS
Prints one JSON object per line: {"event": "assigned"|"revoked"|"lost", "partitions": [...],
"generation": n} and {"event": "records", "partition": p, "offsets": [first, last]}. Offsets
are committed only on the command "commit" read from stdin, answered by {"event": "commit",
"ok": ..., "code": ..., "generation": n}.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.group.consumer import CooperativeConsumer
from streamjoin.group.errors import CommitFailedError
from streamjoin.group.listener import RebalanceListener


def emit(**fields: Any) -> None:
    print(json.dumps(fields), flush=True)


class Report(RebalanceListener):
    def __init__(self) -> None:
        self.consumer: CooperativeConsumer | None = None

    def _emit(self, event: str, partitions: frozenset[TopicPartition]) -> None:
        generation = self.consumer.generation if self.consumer else -1
        emit(
            event=event, partitions=sorted(tp.partition for tp in partitions), generation=generation
        )

    async def on_assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self._emit("assigned", partitions)

    async def on_revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self._emit("revoked", partitions)

    async def on_lost(self, partitions: frozenset[TopicPartition]) -> None:
        self._emit("lost", partitions)


async def main(argv: list[str]) -> None:
    bootstrap, group, topic, assignor, session_ms, heartbeat_ms = argv
    report = Report()
    consumer = CooperativeConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        assignors=[assignor],
        listener=report,
        session_timeout_ms=int(session_ms),
        heartbeat_interval_ms=int(heartbeat_ms),
        rebalance_timeout_ms=int(session_ms),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    report.consumer = consumer
    await consumer.start()
    emit(event="started", member_id=consumer.member.member_id)
    commands = asyncio.create_task(obey(consumer))
    while not commands.done():
        batch = await consumer.getmany(timeout_ms=100)
        for tp, records in batch.items():
            emit(
                event="records",
                partition=tp.partition,
                offsets=[records[0].offset, records[-1].offset],
            )


async def obey(consumer: CooperativeConsumer) -> None:
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        if line.strip() == b"commit":
            generation = consumer.generation
            try:
                await consumer.commit()
                emit(event="commit", ok=True, code=0, generation=generation)
            except CommitFailedError as exc:
                emit(event="commit", ok=False, code=exc.code, generation=generation, error=str(exc))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
