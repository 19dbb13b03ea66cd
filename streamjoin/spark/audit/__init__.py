"""`streamjoin audit`: recompute a join on Spark and diff it against the streaming output."""
