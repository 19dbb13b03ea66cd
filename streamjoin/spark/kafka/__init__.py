"""Kafka on Spark: offset planning, batch reads and writes, the batch and streaming data sources."""
