"""Join processors: what one task does with each input record."""
