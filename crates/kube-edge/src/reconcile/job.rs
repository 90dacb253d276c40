//! What one reconcile reads ([`Job`]), works through ([`Ports`]) and returns ([`Done`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::core::DynamicObject;
use ork_engine::health::Health;
use ork_engine::queue::Reason;
use ork_katalog::Sentinel;
use serde_json::Value;

use crate::error::ReconcileError;
use crate::index::{ChildRef, OwnWrites};
use crate::metrics::Metrics;
use crate::ports::{Cluster, Transport};
use crate::registry::CrossError;

/// Everything one reconcile reads, gathered before it starts.
pub(crate) struct Job {
    pub key: String,
    pub cr: Arc<DynamicObject>,
    pub reason: Reason,
    /// 1 for the first try, n after n-1 failures in a row.
    pub attempt: u32,
    pub sentinels: BTreeMap<Sentinel, bool>,
    /// The children this CR owns, as the watches last saw them.
    pub children: Vec<(ChildRef, Arc<DynamicObject>)>,
    /// `prepared.cross`, or why a selector failed.
    pub cross: Result<BTreeMap<String, Value>, CrossError>,
    /// The entry's health (request, gates).
    pub health: Health,
    /// How many reconciles of this key ran before (for the metrics annotation).
    pub count: u64,
}

/// Looks up any child the watches know, whoever owns it.
pub(crate) trait LiveChildren: Send + Sync {
    fn get(&self, child: &ChildRef) -> Option<Arc<DynamicObject>>;
}

/// What a reconcile works through.
#[derive(Clone, Copy)]
pub(crate) struct Ports<'a> {
    pub cluster: &'a dyn Cluster,
    pub transport: &'a dyn Transport,
    pub live: &'a dyn LiveChildren,
    pub metrics: &'a Metrics,
}

/// How a reconcile that did not fail ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Success {
    /// The service answered; call again after this delay if it asked.
    Reconciled { requeue_after: Option<Duration> },
    /// The reconcile gate was closed (not a failure).
    Gated(String),
    /// A CR being deleted that carries no finalizer of ork's: nothing to do.
    Deleting,
    /// The finalizer is removed.
    Finalized,
    /// The service has not finalized yet: ask again after this delay.
    FinalizePending(Duration),
}

/// What a reconcile did.
#[derive(Debug)]
pub(crate) struct Done {
    pub outcome: Result<Success, ReconcileError>,
    /// ork's own writes, for the index.
    pub own: OwnWrites,
}
