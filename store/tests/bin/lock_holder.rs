//! The second process of `durable_backend.rs`'s locking test
//! (`another_process_holding_the_directory_locks_it_out`): opens the data directory given as
//! its argument, prints `tableq-lock-held`, and holds the directory until its standard input
//! closes; then closes the store and exits 0 (any failure exits non-zero). A binary of its
//! own (`CARGO_BIN_EXE_tableq-store-lock-holder`) so that it is not a test.
#![forbid(unsafe_code)]

use std::io::Read;
use tableq_store::{Backend, DurableBackend};

fn main() {
    let dir = std::env::args_os()
        .nth(1)
        .expect("usage: tableq-store-lock-holder DATA_DIR");
    let store = DurableBackend::open(&dir).expect("the lock holder opens the directory");
    println!("tableq-lock-held");
    let mut sink = String::new();
    let _ = std::io::stdin().read_to_string(&mut sink);
    store.close().expect("close");
}
