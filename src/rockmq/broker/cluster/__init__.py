"""The broker in a cluster: routes across brokers (name server registration) and replication."""
