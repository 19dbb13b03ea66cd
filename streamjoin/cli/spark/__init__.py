"""The Spark commands: backfill, audit, archive and spark-stream."""
