//! # tableq-exec — parallel execution of plans over ordered entity sources
//!
//! (Being built: `EntitySource`, `MemorySource`, compiled predicates, paging.)
#![forbid(unsafe_code)]
#![deny(missing_docs)]
