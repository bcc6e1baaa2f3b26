//! Layer 2, protocol pieces: the Table service's REST protocol as values — what a request
//! names and carries, and how answers are written. Imports only [`crate::state`] (and its
//! own modules); no store operation, no authorization, no routing.
//!
//! * [`resource`] — request paths and response links; [`query_options`] — the query
//!   string; [`negotiate`] — `$format`/`Accept`, `Content-Type`, `Prefer`, versions,
//!   `X-HTTP-Method`; [`continuation`] — paging tokens;
//! * [`error`] — [`ApiError`](error::ApiError), the service's error codes and sentences,
//!   in JSON or XML; [`formats`] — the fixed pieces of both formats (content types, the XML
//!   declaration, SAS times) under `error`, `negotiate` and `xml`;
//! * [`xml`] — the administration operations' XML; [`encode`] — entity and table JSON;
//! * [`body`] — request bodies under the size limit, timeouts and the body budget;
//!   [`context`] — what every handler works with: the per-request context, the bridge to
//!   the blocking pool, response builders.

pub(crate) mod body;
pub(crate) mod context;
pub mod continuation;
pub(crate) mod encode;
pub mod error;
pub(crate) mod formats;
pub mod negotiate;
pub mod query_options;
pub mod resource;
pub mod xml;
