//! One entry loop per Katalog entry. Watches ([`watch`]) turn events into inputs
//! ([`observe`]); the entry's [`EntryState`](state::EntryState) owns its caches, index,
//! schedule and health and changes only through those inputs, handing out work; the driver
//! ([`driver`]) runs it as one task and starts at most `workers` reconciles ([`worker`]), each
//! of which only sends its outcome back. `ork simulate` drives the same state in cycles.

mod driver;
mod lane;
mod live;
mod observe;
mod recorder;
mod rollout;
mod schedule;
mod scopes;
mod start;
mod state;
mod watch;
mod worker;

pub(crate) use driver::published;
pub(crate) use live::{LiveView, ScopeCaches};
pub(crate) use observe::Observer;
pub(crate) use start::{InputWatch, input_watches, start_entry, watch_scopes};
pub use start::{RunError, RunOptions};
pub(crate) use state::{EntryState, Input, ScopeWriter};
pub(crate) use worker::Worker;
