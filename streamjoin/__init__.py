"""streamjoin: Kafka Streams-style stream joins for Python."""

from streamjoin.compiled import run_sources_if_stale

run_sources_if_stale()  # before any compiled module is imported

from streamjoin.dsl import App, JoinWindows  # noqa: E402
from streamjoin.kafka.security import KafkaSecurity  # noqa: E402

__all__ = ("App", "JoinWindows", "KafkaSecurity", "__version__")

__version__ = "0.1.0"
