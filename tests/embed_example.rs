//! Runs `examples/embed.rs` (and its assertions) as part of `cargo test`: the example file
//! is included as a module, so the test does not depend on the example binary having been
//! built. `cargo run --example embed` runs the same code.

#[path = "../examples/embed.rs"]
#[allow(dead_code)]
mod embed;

#[test]
fn embed_example_runs() {
    embed::main();
}
