"""`streamjoin worker`: the command, its start-up checks and `--processes`."""
