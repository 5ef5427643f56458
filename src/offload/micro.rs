//! Micro-compaction (placeholder, filled below).
