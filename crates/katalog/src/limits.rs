//! How large a Katalog may be: checked before anything is parsed, for the Katalog and the CRD
//! files it names alike.

/// Largest Katalog (and CRD) file ork reads: refused before parsing.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Deepest nesting (maps, lists, flow collections) a Katalog may have: refused before parsing.
pub const MAX_NESTING: usize = 40;
