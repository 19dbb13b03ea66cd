"""The worker: tasks, join processing, output, commits."""
