"""The same joins as a batch pipeline on Spark: backfill of history, audit of what the streaming
workers wrote, and Parquet archives of topics.

Spark is an optional extra (`pip install 'streamjoin[spark]'`); only `availability` may be
imported without it. The engine reads `JoinSpec`s and nothing else of the app.
"""

__all__ = ()
