"""streamjoin: Kafka Streams-style stream joins for Python."""

from streamjoin.compiled import run_sources_if_stale

run_sources_if_stale()  # before any compiled module is imported

from typing import TYPE_CHECKING  # noqa: E402

from streamjoin.dsl import App, JoinWindows  # noqa: E402
from streamjoin.kafka.security import KafkaSecurity  # noqa: E402

if TYPE_CHECKING:
    from streamjoin.query.client import QueryClient

__all__ = ("App", "JoinWindows", "KafkaSecurity", "QueryClient", "__version__")

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`streamjoin.QueryClient`, imported on first use (it brings aiohttp)."""
    if name == "QueryClient":
        from streamjoin.query.client import QueryClient  # noqa: PLC0415 - aiohttp on demand

        return QueryClient
    raise AttributeError(f"module 'streamjoin' has no attribute {name!r}")
