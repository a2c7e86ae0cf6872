"""RocksDB storage: key encodings, column families and group commit. Knows nothing of gRPC."""

from rockmq.store.db import Store

__all__ = ["Store"]
