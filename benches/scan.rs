//! Criterion benchmark `scan` (placeholder until its issue lands).
fn main() {}
