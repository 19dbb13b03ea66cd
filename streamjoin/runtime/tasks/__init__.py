"""Tasks and their scheduling."""
