"""streamjoin: Kafka Streams-style stream joins for Python."""

__version__ = "0.1.0"
