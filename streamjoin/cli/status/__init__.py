"""`streamjoin status`: a live view of a worker group."""
