//! Helpers shared by the integration tests of `tableq-exec` (and, by path, of the memory
//! and durable engines in `tableq-store`).

pub mod paging;
pub mod plans;
