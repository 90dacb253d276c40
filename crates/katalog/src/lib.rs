//! The Katalog: ork's configuration (SPEC §1).
//!
//! Data flow: YAML text → [`load_file`] (parse, deny unknown fields, semantic checks) → a typed
//! [`Katalog`] that the rest of ork reads without re-checking. Every problem carries the file,
//! line and field path, so `ork validate` can point at it. [`template`] and [`condition`] are the
//! two small languages the Katalog embeds (Go-style templates, gate conditions).

pub mod condition;
pub mod duration;
mod lines;
mod load;
pub mod model;
mod problem;
mod suggest;
pub mod template;
mod validate;

pub use condition::{Check, Condition};
pub use duration::Duration;
pub use load::{load_file, load_str};
pub use model::*;
pub use problem::{Problem, Problems};
pub use template::Template;
pub use validate::API_VERSION;
