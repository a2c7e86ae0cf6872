"""RocksDB storage: the schema (families and their ids, migrations), key encodings, the replication
op log and group commit. Knows nothing of gRPC."""

from rockmq.store.db import Store

__all__ = ["Store"]
