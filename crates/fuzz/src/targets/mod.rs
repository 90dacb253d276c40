//! The targets, one per input family. Each generates structured input with hostile values and
//! checks its properties on top of the runner's (no panic, bounded time and memory).

mod answer;
mod cr;
mod duration;
mod inspector;
mod katalog;
mod list;
mod template;
mod text;
mod url;

use crate::runner::Target;

/// Every target, in the order a run goes through them.
pub static ALL: &[&dyn Target] = &[
    &katalog::Generated,
    &katalog::Mutated,
    &template::Templates,
    &duration::Durations,
    &url::Urls,
    &answer::Answers,
    &list::Lists,
    &text::Text,
    &inspector::Inspector,
];

/// The target called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Target> {
    ALL.iter().copied().find(|t| t.name() == name)
}

pub use cr::cr;
pub use duration::go_parse_duration;
