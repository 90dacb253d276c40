//! One controller per Katalog entry. Watches ([`watch`]) keep kube-runtime reflector stores and
//! feed the entry's [`Index`]; what the index says to do goes to the work queue; a dispatcher
//! ([`dispatch`]) hands keys to at most `workers` concurrent reconciles, never two for one
//! object, each a [`run_one`](Controller::run_one): gather the job, reconcile, tell the index
//! what was written, schedule what comes next. `ork simulate` drives the same controller
//! without watches.

mod dispatch;
mod lane;
mod runner;
mod schedule;
mod start;
mod watch;

pub(crate) use runner::{Controller, ScopeCaches};
pub(crate) use start::start_entry;
pub use start::{RunError, RunOptions};
