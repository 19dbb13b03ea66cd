"""Local state on RocksDB, backed by changelog topics: stores, checkpoints, restore, standbys.

The runtime uses `StateManager` (one per worker) and the `TaskState` handles it returns; the
rest is exported for tests, tools and the DSL.
"""

from streamjoin.state.changelog_topics import changelog_topic, ensure_changelogs
from streamjoin.state.end_offsets import changelog_end_offset_sums
from streamjoin.state.errors import (
    ChangelogWriteError,
    StateError,
    StoreLockedError,
    StoreNotWritableError,
)
from streamjoin.state.events import (
    RestoreCompleted,
    RestoreProgress,
    RestoreStarted,
    StateEvent,
    StateListener,
    StateWiped,
)
from streamjoin.state.manager import StateConfig, StateManager
from streamjoin.state.phases import RUNNING_ACTIVE_OFFSET_SUM, TaskPhase
from streamjoin.state.reader import ReaderConfig
from streamjoin.state.specs import StoreKind, StoreSpec, TaskSpec
from streamjoin.state.stores.kv_store import KeyValueStore
from streamjoin.state.stores.window_store import WindowStore
from streamjoin.state.task_state import TaskState

__all__ = (
    "RUNNING_ACTIVE_OFFSET_SUM",
    "ChangelogWriteError",
    "KeyValueStore",
    "ReaderConfig",
    "RestoreCompleted",
    "RestoreProgress",
    "RestoreStarted",
    "StateConfig",
    "StateError",
    "StateEvent",
    "StateListener",
    "StateManager",
    "StateWiped",
    "StoreKind",
    "StoreLockedError",
    "StoreNotWritableError",
    "StoreSpec",
    "TaskPhase",
    "TaskSpec",
    "TaskState",
    "WindowStore",
    "changelog_end_offset_sums",
    "changelog_topic",
    "ensure_changelogs",
)
