"""A group member's settings, checked once: mistakes surface at construction, not mid-rebalance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from streamjoin.assignment.consumer.registry import create_assignor
from streamjoin.assignment.model import PartitionAssignor
from streamjoin.errors import ConfigurationError

__all__ = ("MemberConfig", "resolve_assignors")


def resolve_assignors(
    assignors: Sequence[str | PartitionAssignor],
) -> tuple[PartitionAssignor, ...]:
    """Assignor objects from names (streamjoin's registry) or ready-made instances, in order."""
    resolved = tuple(create_assignor(a) if isinstance(a, str) else a for a in assignors)
    names = [a.name for a in resolved]
    if not names:
        raise ConfigurationError(
            "no assignors given: list at least one, e.g. ['cooperative-sticky']"
        )
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigurationError(
            f"assignor names must be unique; listed twice: {', '.join(duplicates)}"
        )
    return resolved


@dataclass(frozen=True, slots=True)
class MemberConfig:
    """Settings of one member of a consumer group (Kafka's names in parentheses).

    Timeouts follow Kafka's meaning. On the embedded broker (Tansu) every JoinGroup lasts about
    half the group's session timeout, so the session timeout also sets the pace of rebalances.
    """

    group_id: str
    topics: tuple[str, ...]
    assignors: tuple[PartitionAssignor, ...]
    """In preference order (partition.assignment.strategy); the group selects one per generation."""
    group_instance_id: str | None = None
    """Static membership (group.instance.id): a restart within the session timeout keeps the
    member's identity, and closing does not leave the group."""
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 60_000
    """How long the coordinator waits for members to rejoin (max.poll.interval.ms)."""
    rejoin_delay_ms: int | None = None
    """Least time between receiving an assignment and starting a rebalance of its own (the
    cooperative follow-up, `request_rejoin`), so the other members can finish their SyncGroup
    first. None: by broker (`streamjoin.group.rejoin_pace`): none on Apache Kafka, 1.5 s on
    the embedded Tansu, which answers SyncGroup by polling."""
    retry_backoff_ms: int = 100
    max_retry_backoff_ms: int = 2_000
    commit_timeout_ms: int = 10_000
    """How long a commit keeps retrying while the coordinator is unavailable."""
    rack: str | None = None
    client_id: str = "streamjoin"

    def __post_init__(self) -> None:
        where = f"group {self.group_id!r}"
        if not self.group_id:
            raise ConfigurationError("group_id is empty: give the consumer group a name")
        if not self.topics or not all(isinstance(t, str) and t for t in self.topics):
            raise ConfigurationError(f"{where}: subscribe to at least one topic (non-empty names)")
        if not self.assignors:
            raise ConfigurationError(f"{where}: list at least one assignor")
        for name in ("session_timeout_ms", "heartbeat_interval_ms", "rebalance_timeout_ms"):
            if getattr(self, name) <= 0:
                raise ConfigurationError(
                    f"{where}: {name} must be positive, got {getattr(self, name)}"
                )
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ConfigurationError(
                f"{where}: heartbeat_interval_ms ({self.heartbeat_interval_ms}) must be below "
                f"session_timeout_ms ({self.session_timeout_ms}); a third of it is usual"
            )
        if self.rejoin_delay_ms is not None and self.rejoin_delay_ms < 0:
            raise ConfigurationError(f"{where}: rejoin_delay_ms must not be negative")
        if not 0 < self.retry_backoff_ms <= self.max_retry_backoff_ms:
            raise ConfigurationError(
                f"{where}: need 0 < retry_backoff_ms ({self.retry_backoff_ms}) <= "
                f"max_retry_backoff_ms ({self.max_retry_backoff_ms})"
            )
        if self.group_instance_id == "":
            raise ConfigurationError(
                f"{where}: group_instance_id is empty; use None for a dynamic member"
            )
