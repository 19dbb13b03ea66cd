"""The RocksDB stores and their encodings: key-value, window, versioned and global stores."""
