//! Property slots: the numbers a source gives custom property names, so that compiled
//! predicates resolve each name once per query ([`EntitySource::property_slot`](crate::EntitySource::property_slot)).

/// An identifier a source assigns to a custom property name, so that compiled predicates
/// resolve each name once per query instead of once per entity. Its meaning is private to
/// the source that issued it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PropertySlot(pub u32);

/// What a source knows about a property name, for compiled predicates
/// ([`EntitySource::property_slot`](crate::EntitySource::property_slot)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotLookup {
    /// Read the property through [`SourceRow::custom_by_slot`](crate::SourceRow::custom_by_slot) with this slot.
    Slot(PropertySlot),
    /// No entity of the source has a property of this name (every comparison on it is
    /// false without reading a row).
    Absent,
    /// The source has no slots: read the property by name ([`EntityView::custom`](tableq_model::EntityView::custom)).
    ByName,
}
