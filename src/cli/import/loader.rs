//! What the command hands a destination: the write [`Mode`], each valid line as an
//! [`Item`], and the [`Loader`] interface both destinations implement (`direct` for
//! `--data DIR`, `http` for `--endpoint URL`).

use tableq::model::Entity;

/// How each entity is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Insert Entity: existing keys are rejected.
    Insert,
    /// Insert Or Replace Entity.
    Upsert,
}

/// One valid line on its way to the destination.
pub struct Item {
    /// The line number (from 1).
    pub line: u64,
    /// The decoded entity.
    pub entity: Entity,
    /// The line's text (the request body with `--endpoint`).
    pub text: String,
}

/// A loader: takes items in input order and writes them, reporting into the [`Outcome`](super::outcome::Outcome) it
/// was made with.
pub trait Loader {
    /// Takes one item. `Err` stops the run (the destination failed; a message for people).
    fn push(&mut self, item: Item) -> Result<(), String>;
    /// Writes everything still pending and waits for it.
    fn finish(self: Box<Self>) -> Result<(), String>;
}
