//! Deterministic synthetic entities for benchmarks and tests (placeholder until the executor issue lands).
