"""Where records leave a task: sinks, the producer, dead letters, purge, transactions."""
