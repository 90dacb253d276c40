//! The Katalog: ork's configuration (SPEC §1, §9).
//!
//! Data flow: YAML text → [`load_file`] (size and nesting limits, parse, deny unknown fields,
//! resolve `crdFile` and paths, bind notes, semantic checks) → a typed [`Katalog`] that the
//! rest of ork reads without re-checking. Every problem carries the file, line and field path,
//! so `ork validate` can point at it. [`template`] and [`condition`] are the two small
//! languages the Katalog embeds (Go templates with Orkestra's notes, gate conditions).
//! [`model`] only describes the file; `render` renders its templates over a CR at run time.

pub mod condition;
pub mod crd;
pub mod duration;
pub mod kinds;
mod limits;
mod lines;
mod load;
pub mod metacontroller;
pub mod model;
pub mod orkestra;
mod problem;
mod render;
mod resolve;
pub mod schema_fields;
mod sentinel;
pub mod suggest;
pub mod template;
mod validate;

pub use condition::{Check, Condition};
pub use duration::Duration;
pub use limits::{MAX_FILE_BYTES, MAX_NESTING};
pub use load::{REFUSED_FIELDS, load_file, load_str, locate};
pub use model::*;
pub use problem::{Problem, Problems};
pub use template::{Facts, Notes, RenderContext, Template};
pub use validate::{API_VERSION, API_VERSIONS, Finding, KINDS, MAX_BURST, MAX_QPS, MIN_QPS};
