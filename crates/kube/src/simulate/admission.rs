//! An entry's admission offline (`ork test`, `ork conform`): its service asked exactly as `ork
//! run`'s webhook asks it (SPEC §21), the mutation first and then the validation of the mutated
//! object, as the API server calls them.

use std::sync::Arc;

use ork_katalog::Katalog;
use ork_remote::HttpTransport;
use serde_json::{Map, Value, json};

use super::world::{SimulateError, SimulateOptions};
use crate::admission::{Admitter, Phase, apply_patch};
use crate::entry::{EntryContext, EntryError};

/// A write of a CR, as the API server describes it to a webhook.
#[derive(Debug, Clone)]
pub struct Write {
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: String,
    pub object: Value,
    pub old_object: Option<Value>,
    pub dry_run: bool,
}

/// How a write fared through the entry's webhooks.
#[derive(Debug, Clone, PartialEq)]
pub struct Admitted {
    pub allowed: bool,
    /// The first denial's message.
    pub message: Option<String>,
    pub warnings: Vec<String>,
    /// The object after the mutation's patch.
    pub object: Value,
    /// The mutation's patch (empty when nothing was defaulted).
    pub patch: Vec<Value>,
    /// The service did not answer with a verdict: why (ork then follows `failurePolicy`).
    pub failed: Option<String>,
}

/// The admission of one entry, offline.
#[derive(Debug)]
pub struct OfflineAdmission {
    admitter: Admitter,
    group: String,
    version: String,
    kind: String,
}

impl OfflineAdmission {
    /// The admission of `entry`, `None` when it asks for none.
    ///
    /// # Errors
    /// No such entry, or its transport cannot be built (a credential, TLS).
    pub fn new(
        katalog: &Katalog,
        entry: &str,
        options: &SimulateOptions,
    ) -> Result<Option<OfflineAdmission>, SimulateError> {
        let e =
            katalog.spec.crds.get(entry).ok_or_else(|| {
                SimulateError::Input(format!("no entry {entry:?} in the Katalog"))
            })?;
        let Some(remote) = &e.operator_box.reconcile.remote else {
            return Ok(None);
        };
        let Some(admission) = &remote.admission else {
            return Ok(None);
        };
        let fail = |error: EntryError| SimulateError::Entry {
            entry: entry.to_string(),
            error,
        };
        let endpoint = remote
            .endpoint
            .as_ref()
            .map(|t| t.source().to_string())
            .ok_or_else(|| {
                fail(EntryError::Admission(
                    "admission needs remote.endpoint".into(),
                ))
            })?;
        let hook = ork_katalog::metacontroller::Hook {
            url: crate::admission::url(&endpoint, &admission.path),
            timeout: admission.timeout.0,
        };
        let remote = EntryContext::hook_remote(remote, &hook).map_err(fail)?;
        let ork_namespace = std::env::var("ORK_NAMESPACE").unwrap_or_default();
        let transport = super::world::offline_transport(
            &remote,
            options,
            &HttpTransport::new()?,
            &ork_namespace,
        )
        .map_err(fail)?;
        Ok(Some(OfflineAdmission {
            admitter: Admitter {
                entry: entry.to_string(),
                transport: Arc::from(transport),
                failure_policy: admission.failure_policy,
                validate: admission.validate,
                mutate: admission.mutate,
                metrics: crate::metrics::Metrics::new(),
            },
            group: e.api_types.group.clone(),
            version: e.api_types.version.clone(),
            kind: e.api_types.kind.clone(),
        }))
    }

    pub fn validates(&self) -> bool {
        self.admitter.validate
    }

    pub fn mutates(&self) -> bool {
        self.admitter.mutate
    }

    /// `write` through the entry's webhooks: the mutation (if it mutates), then the validation
    /// (if it validates) of the mutated object.
    pub async fn admit(&self, write: &Write) -> Admitted {
        let mut out = Admitted {
            allowed: true,
            message: None,
            warnings: Vec::new(),
            object: write.object.clone(),
            patch: Vec::new(),
            failed: None,
        };
        let phases = [
            (self.admitter.mutate, Phase::Mutate),
            (self.admitter.validate, Phase::Validate),
        ];
        for (_, phase) in phases.into_iter().filter(|(on, _)| *on) {
            let request = self.request(write, &out.object);
            match self.admitter.decide(phase, &request).await {
                Err(why) => {
                    out.failed = Some(why);
                    out.allowed = false;
                    return out;
                }
                Ok(v) => {
                    out.warnings.extend(v.warnings);
                    if !v.allowed {
                        out.allowed = false;
                        out.message = v.message;
                        return out;
                    }
                    if !v.patch.is_empty() {
                        if let Err(why) = apply_patch(&mut out.object, &v.patch) {
                            out.failed = Some(format!("the patch does not apply: {why}"));
                            out.allowed = false;
                            return out;
                        }
                        out.patch.extend(v.patch);
                    }
                }
            }
        }
        out
    }

    fn request(&self, write: &Write, object: &Value) -> Map<String, Value> {
        let meta = |k: &str| {
            object
                .pointer(&format!("/metadata/{k}"))
                .cloned()
                .unwrap_or(json!(""))
        };
        let request = json!({
            "uid": "ork-offline",
            "operation": write.operation,
            "kind": {"group": self.group, "version": self.version, "kind": self.kind},
            "namespace": meta("namespace"),
            "name": meta("name"),
            "object": object,
            "oldObject": write.old_object,
            "userInfo": {"username": "ork-offline", "groups": ["system:authenticated"]},
            "dryRun": write.dry_run,
        });
        match request {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}
