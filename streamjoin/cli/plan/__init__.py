"""`streamjoin plan`: what-if runs of the consumer and task assignors, offline or live."""
