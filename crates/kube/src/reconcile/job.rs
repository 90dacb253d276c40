//! What one reconcile reads ([`Job`]), works through ([`Ports`]) and returns ([`Done`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::core::DynamicObject;
use kube::runtime::events::{Event, EventType};
use ork_engine::health::Health;
use ork_engine::queue::Reason;
use ork_katalog::Sentinel;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::exchange::Exchange;
use super::plan::Plan;
use crate::cache::Holder;
use crate::error::ReconcileError;
use crate::index::{ChildRef, OwnWrites};
use crate::inputs::{Gathered, InputError};
use crate::metrics::Metrics;
use crate::packed::{Packed, Packer};
use crate::ports::{Cluster, CrRef, Transport};
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
    /// `prepared.inputs` and what of them is missing, or why they could not be gathered.
    pub inputs: Result<Gathered, InputError>,
    /// The entry's health (request, gates).
    pub health: Health,
    /// How many reconciles of this key ran before (for the metrics annotation).
    pub count: u64,
    /// Whether the last reconcile of this key in this process went well (`None`: none ran
    /// here yet). The CR's own annotation says so only once the lane has written it.
    pub last_ok: Option<bool>,
}

/// Looks up any child the watches know, whoever owns it.
pub(crate) trait LiveChildren: Send + Sync {
    fn get(&self, child: &ChildRef) -> Option<Arc<DynamicObject>>;
    /// Whether an object of that name exists at all, labelled by ork or not, and who holds it.
    fn presence(&self, child: &ChildRef) -> Presence;
}

/// What the watches know of an object's existence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Presence {
    /// Not watched here (`ork simulate`): ask the cluster.
    Unknown,
    Absent,
    Held(Holder),
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
    /// Writes that may wait: they never delay another CR's convergence (SPEC §10).
    pub later: Option<Later>,
    /// The request and answer, for the flight recorder.
    pub exchange: Exchange,
    /// What it decided for the children, when it got that far.
    pub plan: Option<Plan>,
}

impl Done {
    /// A reconcile that ended with `outcome` before it exchanged anything with the service.
    pub fn early(outcome: Result<Success, ReconcileError>, own: OwnWrites) -> Done {
        Done {
            outcome,
            own,
            later: None,
            exchange: Exchange::default(),
            plan: None,
        }
    }
}

/// The CR's annotations and events of a reconcile: written after it, on a lower-priority lane
/// that coalesces what piles up for one CR. During a burst one waits for every CR, so the lane
/// keeps it packed ([`Later::pack`]).
pub(crate) struct Later {
    pub cr: CrRef,
    /// A merge patch of the CR's `metadata` (labels, annotations).
    metadata: Option<Map<String, Value>>,
    events: Vec<Event>,
}

/// At most this many events wait per CR; older ones are dropped first.
const EVENTS_WAITING: usize = 20;

impl std::fmt::Debug for Later {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Later")
            .field("metadata", &self.metadata)
            .field("events", &self.events.len())
            .finish()
    }
}

/// A [`Later`] as JSON, to be packed.
#[derive(Serialize, Deserialize)]
struct LaterText {
    cr: CrRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    events: Vec<EventText>,
}

#[derive(Serialize, Deserialize)]
struct EventText {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    warning: bool,
    reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
    action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    secondary: Option<ObjectReference>,
}

impl Later {
    pub fn new(cr: CrRef, metadata: Option<Map<String, Value>>, events: Vec<Event>) -> Later {
        Later {
            cr,
            metadata,
            events,
        }
    }

    /// The metadata patch.
    #[cfg(test)]
    pub fn metadata(&self) -> Option<&Map<String, Value>> {
        self.metadata.as_ref()
    }

    /// The events.
    #[cfg(test)]
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn is_empty(&self) -> bool {
        self.metadata.is_none() && self.events.is_empty()
    }

    /// Folds a newer reconcile's writes into these: its metadata wins, events add up.
    pub fn merge(&mut self, newer: Later) {
        self.cr = newer.cr;
        if newer.metadata.is_some() {
            self.metadata = newer.metadata;
        }
        self.events.extend(newer.events);
        let excess = self.events.len().saturating_sub(EVENTS_WAITING);
        self.events.drain(..excess);
    }

    /// As the lane keeps it while it waits: one packed text (about a tenth of the parsed form).
    pub fn pack(self, packer: &Packer) -> Packed {
        let text = LaterText {
            cr: self.cr,
            metadata: self.metadata,
            events: self
                .events
                .into_iter()
                .map(|e| EventText {
                    warning: e.type_ == EventType::Warning,
                    reason: e.reason,
                    note: e.note,
                    action: e.action,
                    secondary: e.secondary,
                })
                .collect(),
        };
        packer.pack(&serde_json::to_string(&text).unwrap_or_default())
    }

    /// From [`Later::pack`]'s text.
    pub fn unpack(packed: &Packed) -> Option<Later> {
        let text: LaterText = serde_json::from_str(&packed.unpack()?)
            .inspect_err(|e| tracing::error!(error = %e, "a waiting write does not parse"))
            .ok()?;
        Some(Later {
            cr: text.cr,
            metadata: text.metadata,
            events: text
                .events
                .into_iter()
                .map(|e| Event {
                    type_: if e.warning {
                        EventType::Warning
                    } else {
                        EventType::Normal
                    },
                    reason: e.reason,
                    note: e.note,
                    action: e.action,
                    secondary: e.secondary,
                })
                .collect(),
        })
    }

    /// Writes them: the metadata patch and the events, together.
    pub async fn write(&self, cluster: &dyn Cluster) {
        let cr = &self.cr;
        let annotation_write = async {
            if let Some(m) = &self.metadata
                && let Err(e) = cluster.patch_metadata(cr, m).await
            {
                tracing::warn!(error = %e, "CR labels and annotations not written");
            }
        };
        let event_writes = async {
            for e in &self.events {
                if let Err(err) = cluster.event(cr, e).await {
                    tracing::warn!(error = %err, "event not recorded");
                }
            }
        };
        tokio::join!(annotation_write, event_writes);
    }
}
