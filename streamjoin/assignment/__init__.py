"""Pure assignment logic: consumer partition assignors, the task assignor and their codecs."""
