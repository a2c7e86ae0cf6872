"""The byte unit settings, limits and budgets are written in (a leaf: imports nothing of rockmq)."""

MiB = 1024 * 1024
