//! Rendering of parse diagnostics for people (placeholder until the parser issue lands).
