"""What every side of rockmq shares to talk and to run, below the broker, the name server, the
client, Spark and the bench: gRPC channels and their caches (`channels`), credentials and request
signing (`credentials`, `signature`), TLS (`tls`), connection limits (`connection_limits`), the
guard against request bytes that do not parse (`unparsed`), what a servicer reads from a call
(`requests`), stop signals, the ready file and the log's rate limit. It imports `protocol` and the
leaf modules only (tests/unit/test_layers.py)."""
