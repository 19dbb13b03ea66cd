"""Bad records: what went wrong, where the record came from, and the record itself.

By default they go to the dead-letter topic `<app_id>-dlq` and the worker goes on; with
`on_error="fail"` the worker stops with the same message.
"""

from __future__ import annotations

from streamjoin.errors import StreamJoinError
from streamjoin.runtime.output.sink import OutgoingRecord

__all__ = ("BadRecordError", "dead_letter", "dead_letter_topic")


class BadRecordError(StreamJoinError):
    """A record could not be processed (undecodable, bad key, or the joiner raised)."""

    def __init__(
        self, join: str, topic: str, partition: int, offset: int, error: BaseException
    ) -> None:
        super().__init__(
            f"join {join!r}: bad record at {topic}[{partition}]@{offset}: "
            f"{type(error).__name__}: {error}"
        )
        self.join = join
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.error = error


def dead_letter_topic(app_id: str) -> str:
    return f"{app_id}-dlq"


def dead_letter(
    app_id: str,
    bad: BadRecordError,
    key: bytes | None,
    value: bytes | None,
    timestamp: int,
    *,
    omitted_bytes: int | None = None,
) -> OutgoingRecord:
    """The bad record unchanged, with headers naming the error and its source; a record too
    large for the broker comes without its value (`omitted_bytes` says how large it was)."""
    headers = [
        ("streamjoin.error.class", type(bad.error).__name__.encode()),
        ("streamjoin.error.message", str(bad.error).encode()),
        ("streamjoin.join", bad.join.encode()),
        ("streamjoin.source.topic", bad.topic.encode()),
        ("streamjoin.source.partition", str(bad.partition).encode()),
        ("streamjoin.source.offset", str(bad.offset).encode()),
    ]
    if omitted_bytes is not None:
        headers.append(("streamjoin.omitted.bytes", str(omitted_bytes).encode()))
    return OutgoingRecord(dead_letter_topic(app_id), key, value, timestamp, headers)
