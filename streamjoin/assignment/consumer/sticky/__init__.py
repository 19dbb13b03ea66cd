"""The sticky consumer assignors (Kafka's sticky, streamjoin's stream-join-sticky), their parts."""
