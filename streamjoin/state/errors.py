"""Errors of the state layer: each names the task or store it concerns and what to do."""

from __future__ import annotations

from streamjoin.errors import StreamJoinError

__all__ = (
    "ChangelogWriteError",
    "StateDirInUseError",
    "StateError",
    "StoreLockedError",
    "StoreNotWritableError",
)


class StateError(StreamJoinError):
    """Local state cannot be used as asked."""


class StoreLockedError(StateError):
    """Another process holds the RocksDB lock of a store (two workers share a state directory)."""


class StateDirInUseError(StateError):
    """Another worker holds the app's state directory (two workers given one --state-dir)."""


class StoreNotWritableError(StateError):
    """A write reached a store whose task is not a running active (restoring, standby...)."""


class ChangelogWriteError(StateError):
    """The producer failed to deliver changelog records; the task's unconfirmed writes are lost.

    The runtime must close the task without a checkpoint (`clean=False`) and open it again: the
    store then restores from the changelog and the input is reprocessed from the committed offset.
    """
