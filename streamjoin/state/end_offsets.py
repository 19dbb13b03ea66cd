"""Changelog end offsets, read the way the embedded broker gets right, by one long-lived consumer.

ListOffsets (`end_offsets()`) is wrong on the embedded broker whenever a batch held more than one
record; the high watermark in fetch responses is right on every broker. So: seek near the end
(ListOffsets is close enough for a start), fetch once per partition, and take the watermark.
Under exactly-once too: not the last stable offset, which a commit's markers move only after the
commit has returned, so a promotion that read it just after the previous owner's last commit ran
without that commit's writes (a restoring active reads on until every transaction up to the
watermark is resolved; task_state.py).

Every read assigns its partitions afresh, so each end comes from a fetch sent after the call
began: a task promoted from standby to active may trust it to cover every write its previous
owner confirmed before giving the task up. The consumer stays connected between reads (from the
first, or from when a standby opens): starting one (bootstrap, metadata) took most of a read's
time, on the hand-off path of a moved task twice (the leader's assignment, then the promotion).
The promotion's ends may also be read ahead, when the JoinGroup of its generation answers
(`read_ahead`, `ends_ahead`): by then every member has joined, each after revoking what it gave
up, so those ends cover its previous owner's writes too, and the read overlaps the SyncGroup.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

from streamjoin.assignment.model import TopicPartition
from streamjoin.kafka.connection import KafkaTarget, connect
from streamjoin.state.changelog_topics import store_topic
from streamjoin.state.errors import StateError
from streamjoin.state.specs import TaskSpec

__all__ = ("ChangelogEnds", "Ends", "changelog_end_offset_sums")

Ends = dict[TopicPartition, int]


class ChangelogEnds:
    """Reads the ends of changelog partitions until closed. Reads asked for while one is under
    way are served together by the next (the tasks promoted at one hand-off, at once)."""

    def __init__(self, bootstrap: KafkaTarget, *, timeout_s: float = 10.0) -> None:
        self._kafka = connect(bootstrap)
        self._timeout_s = timeout_s
        self._connecting: asyncio.Task[Any] | None = None
        self._asked: list[tuple[frozenset[TopicPartition], asyncio.Future[Ends]]] = []
        self._serving: asyncio.Task[None] | None = None
        self._ahead: tuple[frozenset[TopicPartition], asyncio.Future[Ends]] | None = None
        self._closed = False

    def prepare(self) -> None:
        """Connect in the background now, so that the first read does not wait for it."""
        failed = (
            self._connecting is not None
            and self._connecting.done()
            and (self._connecting.cancelled() or self._connecting.exception() is not None)
        )
        if (self._connecting is None or failed) and not self._closed:
            self._connecting = asyncio.create_task(self._connect(), name="changelog ends")

    async def close(self) -> None:
        self._closed = True
        if self._serving is not None:
            await asyncio.gather(self._serving, return_exceptions=True)
        if self._connecting is not None:
            self._connecting.cancel()  # a start still waiting for the broker ends here
            connected: Any = (await asyncio.gather(self._connecting, return_exceptions=True))[0]
            if not isinstance(connected, BaseException):
                await connected.stop()

    async def ends(self, partitions: Iterable[TopicPartition]) -> Ends:
        """Partition -> its end, from fetches sent after this call began.

        The changelogs must exist (StateManager or `ensure_changelogs` creates them): asking for
        a missing topic would make a broker with auto-creation create it with a default layout.
        """
        wanted = frozenset(partitions)
        if not wanted:
            return {}
        if self._closed:
            raise StateError("changelog ends asked for after the worker closed its state")
        answer: asyncio.Future[Ends] = asyncio.get_running_loop().create_future()
        self._asked.append((wanted, answer))
        if self._serving is None:
            self._serving = asyncio.create_task(self._serve(), name="changelog ends: read")
        return await answer

    def read_ahead(self, partitions: Iterable[TopicPartition]) -> None:
        """Start reading these ends now, for `ends_ahead`; forgets the previous read ahead."""
        wanted = frozenset(partitions)
        self._ahead = None
        if wanted and not self._closed:
            read = asyncio.ensure_future(self.ends(wanted))
            read.add_done_callback(_retrieve)  # its ends may never be asked for
            self._ahead = (wanted, read)

    async def ends_ahead(self, partitions: Iterable[TopicPartition]) -> Ends:
        """The ends `read_ahead` read from its call on, if it covered `partitions` and
        succeeded; else `ends(partitions)`, read from this call on."""
        wanted, ahead = frozenset(partitions), self._ahead
        if ahead is not None and wanted <= ahead[0]:
            ends = (await asyncio.gather(asyncio.shield(ahead[1]), return_exceptions=True))[0]
            if not isinstance(ends, BaseException):
                return {tp: ends[tp] for tp in wanted}
        return await self.ends(wanted)

    async def _serve(self) -> None:
        try:
            while self._asked:
                asked, self._asked = self._asked, []
                try:
                    ends = await self._read_afresh(
                        sorted(frozenset().union(*(w for w, _ in asked)))
                    )
                except Exception as exc:  # noqa: BLE001 - each caller gets it
                    for _, answer in asked:
                        if not answer.done():
                            answer.set_exception(exc)
                    continue
                for wanted, answer in asked:
                    if not answer.done():  # its caller may have given up
                        answer.set_result({tp: ends[tp] for tp in wanted})
        finally:
            self._serving = None

    async def _connect(self) -> Any:
        consumer = self._kafka.consumer(
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            fetch_max_wait_ms=10,
        )
        try:
            await consumer.start()
            await asyncio.sleep(0)  # aiokafka's stop() raises if called before its routines ran
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await consumer.stop()
            raise
        return consumer

    async def _read_afresh(self, wanted: list[TopicPartition]) -> Ends:
        self.prepare()
        assert self._connecting is not None
        consumer: Any = None
        try:
            async with asyncio.timeout(self._timeout_s):  # the leader's assignment waits for it
                consumer = await asyncio.shield(self._connecting)
                consumer.assign(wanted)  # afresh: no watermark of an earlier read survives
                await consumer.seek_to_end(*wanted)
            return await self._read(consumer, wanted)
        except TimeoutError as exc:
            raise StateError(
                f"no answer within {self._timeout_s:.0f}s to the start of a read of the ends of "
                f"{len(wanted)} changelog partitions; is the broker reachable?"
            ) from exc
        finally:
            if consumer is not None:
                consumer.pause(*wanted)  # no fetching between reads

    async def sums(self, app_id: str, tasks: Iterable[TaskSpec]) -> dict[str, int]:
        """Task id -> sum of the end offsets of its stores' changelog partitions."""
        partitions = {
            spec.task_id: [
                TopicPartition(store_topic(app_id, s), spec.partition) for s in spec.stores
            ]
            for spec in tasks
        }
        ends = await self.ends(tp for tps in partitions.values() for tp in tps)
        return {task_id: sum(ends[tp] for tp in tps) for task_id, tps in partitions.items()}

    async def _read(self, consumer: Any, wanted: list[TopicPartition]) -> Ends:
        ends: Ends = {}
        try:
            async with asyncio.timeout(self._timeout_s):
                while len(ends) < len(wanted):
                    await consumer.getmany(timeout_ms=10)  # an empty poll takes all of it
                    for tp in wanted:
                        end = consumer.highwater(tp)
                        if end is not None and end >= 0:
                            ends[tp] = int(end)
        except TimeoutError as exc:
            missing = ", ".join(f"{tp.topic}[{tp.partition}]" for tp in wanted if tp not in ends)
            raise StateError(
                f"no fetch response within {self._timeout_s:.0f}s for changelog partitions "
                f"{missing}; is the broker reachable?"
            ) from exc
        return ends


def _retrieve(read: asyncio.Future[Ends]) -> None:
    if not read.cancelled():
        read.exception()


async def changelog_end_offset_sums(
    bootstrap: KafkaTarget, app_id: str, tasks: Iterable[TaskSpec], *, timeout_s: float = 10.0
) -> dict[str, int]:
    """Task id -> sum of the end offsets of its stores' changelog partitions, by a consumer of
    its own (for tools; a worker keeps one ChangelogEnds)."""
    reader = ChangelogEnds(bootstrap, timeout_s=timeout_s)
    try:
        return await reader.sums(app_id, tasks)
    finally:
        await reader.close()
