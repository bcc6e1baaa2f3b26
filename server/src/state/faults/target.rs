//! [`Target`]: what a request touches, as the throttle and the fault rules see it.

/// One request, described for throttling and fault matching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target<'a> {
    /// The account the request is for.
    pub account: &'a str,
    /// The table, when the request names one (not for service-level requests).
    pub table: Option<&'a str>,
    /// The operation's name as the request log writes it (`InsertEntity`,
    /// `QueryEntities`, `EntityGroupTransaction`, …).
    pub operation: &'a str,
    /// The PartitionKey, when the request is confined to one partition (an entity
    /// operation, a batch, a query whose filter fixes it).
    pub partition_key: Option<&'a str>,
    /// How many entities the request handles, as the scalability targets count them: 1 for
    /// a single-entity operation or a query, the number of operations for a batch.
    pub entities: u32,
    /// Whether the request is a batch (`$batch`), the only kind a `batchFailAt` rule fails.
    pub batch: bool,
}
