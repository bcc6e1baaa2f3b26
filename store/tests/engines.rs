//! The store's end-to-end tests, one test binary: each file under `store/tests/` is one
//! module (`autotests = false` in `Cargo.toml`), and a test's name starts with its file's
//! (`cargo test -p tableq-store --test engines durable_backend::`). One binary links the
//! workspace once instead of once per file; the engines share the contract suite
//! (`suite`), the PostgreSQL servers (`pg`) and the executor's plan and paging checks.

#[path = "../../exec/tests/support/paging.rs"]
mod paging_support;
mod pg;
#[path = "../../exec/tests/support/plans.rs"]
mod plans;
#[macro_use]
mod suite;

mod disk_full;
mod durable_backend;
mod memory_backend;
mod memory_executor;
mod paging;
mod postgres_backend;
mod postgres_differential;
mod postgres_sharded;
mod reference_backend;
