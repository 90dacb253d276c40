//! A serde default more than one section uses.

pub(super) fn yes() -> bool {
    true
}
