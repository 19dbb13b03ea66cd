"""streamjoin: Kafka Streams-style stream joins for Python."""

from streamjoin.dsl import App, JoinWindows

__all__ = ("App", "JoinWindows", "__version__")

__version__ = "0.1.0"
