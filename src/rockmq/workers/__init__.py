"""`rockmq serve --workers N`: N broker shard processes on one machine, joined as a cluster (see `supervisor`)."""
