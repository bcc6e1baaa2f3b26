//! Layer 4, the operations: one handler per REST operation, reached from the router
//! (`crate::app`) with the account's state, the request's context and what its grant
//! admits. Imports [`crate::state`], [`crate::protocol`], [`crate::auth`] and its own
//! modules.
//!
//! * [`tables`] — Query / Create / Delete Table (and the table-name check the others use);
//! * [`entities`] — Insert, Get, Update, Merge, Delete Entity; [`query`] — Query Entities
//!   ([`query::QueryRequest`]: a request's query parsed and planned);
//! * [`batch`] — `$batch`: changesets applied in one atomic store write;
//! * [`admin`] — service properties, stats and table ACLs (XML); [`cors`] — CORS
//!   preflights and response headers from the stored rules;
//! * [`explorer`] — the browser explorer's files and the query explain
//!   (`x-tableq-explain`).

pub(crate) mod admin;
pub(crate) mod batch;
pub(crate) mod cors;
pub(crate) mod entities;
pub(crate) mod explorer;
pub(crate) mod query;
pub(crate) mod tableq;
pub(crate) mod tables;
