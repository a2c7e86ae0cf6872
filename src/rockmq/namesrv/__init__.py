"""The name server: joins brokers into a cluster (see `registry` and `server`)."""
