//! Criterion benchmark `parse` (placeholder until its issue lands).
fn main() {}
