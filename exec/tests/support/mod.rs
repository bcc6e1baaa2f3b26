//! Helpers shared by the integration tests of `tableq-exec` (and, by path, of the memory
//! engine in `tableq-store`).

pub mod plans;
