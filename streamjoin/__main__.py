"""`python -m streamjoin` is the `streamjoin` command."""

from streamjoin.cli import main

main()
