//! Criterion benchmark `plan` (placeholder until its issue lands).
fn main() {}
