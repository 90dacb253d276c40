//! What a template sees besides its own text: the object (CR fields at the top level), the
//! runtime facts under `.ork`, the Katalog's note functions and the sentinels of the event.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::compiled::Notes;
use crate::sentinel::Sentinel;

/// Where templates find the [`Facts`]: `.ork`, and `.inrun` as inrun's Catalogs (Orkestra
/// renamed) write it, the same map under both.
pub(crate) const FACTS_KEYS: [&str; 2] = ["ork", "inrun"];

/// Runtime facts about the ork process, constant for its lifetime, visible to every template
/// as `.ork.inCluster` (alias `.ork.inPod`), `.ork.namespace` and `.ork.version` (and the same
/// under `.inrun`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Facts {
    pub in_cluster: bool,
    pub namespace: String,
    pub version: String,
}

const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

static INSTALLED: OnceLock<Facts> = OnceLock::new();

impl Facts {
    /// Reads the facts from the environment: in a cluster when a service account token is
    /// mounted; the namespace from `ORK_NAMESPACE`, else the pod's own namespace, else
    /// `default`; the version of this build.
    pub fn detect() -> Facts {
        let sa = Path::new(SERVICE_ACCOUNT);
        let in_cluster = sa.join("token").is_file();
        let namespace = std::env::var("ORK_NAMESPACE")
            .ok()
            .filter(|n| !n.trim().is_empty())
            .or_else(|| {
                std::fs::read_to_string(sa.join("namespace"))
                    .ok()
                    .map(|n| n.trim().to_string())
                    .filter(|n| !n.is_empty())
            })
            .unwrap_or_else(|| "default".to_string());
        Facts {
            in_cluster,
            namespace,
            version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }

    /// Sets the process-wide facts once, at startup (e.g. with ork's namespace from a flag).
    ///
    /// # Errors
    /// The given facts back when facts were already installed or already read.
    pub fn install(facts: Facts) -> Result<(), Facts> {
        INSTALLED.set(facts)
    }

    /// The process-wide facts: the installed ones, else detected on first use.
    pub fn current() -> &'static Facts {
        INSTALLED.get_or_init(Facts::detect)
    }

    /// The `.ork` (and `.inrun`) map templates see.
    pub fn as_value(&self) -> Value {
        json!({
            "inCluster": self.in_cluster,
            "inPod": self.in_cluster,
            "namespace": self.namespace,
            "version": self.version,
        })
    }
}

/// Everything one rendering sees. The object's fields stay at the top level (`.metadata.name`,
/// `.spec.x`); `.ork` is always the runtime facts.
#[derive(Clone, Copy, Debug)]
pub struct RenderContext<'a> {
    pub data: &'a Value,
    pub facts: &'a Facts,
    pub notes: Option<&'a Notes>,
    /// Sentinel values of the event being evaluated; sentinel functions return `false`
    /// without them.
    pub sentinels: Option<&'a BTreeMap<Sentinel, bool>>,
}

impl<'a> RenderContext<'a> {
    /// A context over `data` with the process facts and no notes or sentinels.
    pub fn new(data: &'a Value) -> RenderContext<'a> {
        RenderContext {
            data,
            facts: Facts::current(),
            notes: None,
            sentinels: None,
        }
    }

    pub fn with_facts(mut self, facts: &'a Facts) -> Self {
        self.facts = facts;
        self
    }

    pub fn with_notes(mut self, notes: &'a Notes) -> Self {
        self.notes = Some(notes);
        self
    }

    pub fn with_sentinels(mut self, sentinels: &'a BTreeMap<Sentinel, bool>) -> Self {
        self.sentinels = Some(sentinels);
        self
    }
}
