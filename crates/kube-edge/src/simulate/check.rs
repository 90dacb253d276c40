//! `ork check`: the request `ork run` would send, once per CR, and every way the answer breaks
//! the protocol.

use ork_katalog::Katalog;
use ork_remote::HttpTransport;
use serde::Serialize;
use serde_json::Value;

use super::{SimulateOptions, build_entries, place_cr, sync};
use crate::controller::RunOptions;
use crate::runtime::Runtime;

/// `ork check`'s verdict on one CR's answer.
#[derive(Debug, Clone, Serialize)]
pub struct Checked {
    pub key: String,
    /// The call itself failed (no answer to check).
    pub call_error: Option<String>,
    pub lint: ork_protocol::Lint,
}

/// Sends the request of each CR to `entry`'s service once and lints every answer.
///
/// # Errors
/// As [`simulate`], or an entry that is not in the Katalog.
pub async fn check(
    katalog: Katalog,
    entry: &str,
    crs: Vec<Value>,
    options: SimulateOptions,
) -> Result<Vec<Checked>, String> {
    if !katalog.spec.crds.contains_key(entry) {
        let names: Vec<&String> = katalog.spec.crds.keys().collect();
        return Err(format!(
            "no entry {entry:?} in the Katalog (entries: {names:?})"
        ));
    }
    let runtime = Runtime::new(&katalog, true);
    let transport = HttpTransport::new().map_err(|e| e.to_string())?;
    let run_options = RunOptions {
        ork_namespace: std::env::var("ORK_NAMESPACE").unwrap_or_else(|_| "default".into()),
        katalog_dir: options.katalog_dir.clone(),
    };
    let mut entries = build_entries(
        &katalog,
        &options,
        &run_options,
        runtime.process(),
        &transport,
        None,
    )?;
    for cr in crs {
        place_cr(&entries, cr)?;
    }
    let sim = entries
        .get_mut(entry)
        .ok_or_else(|| format!("entry {entry:?} has no remote reconciler"))?;
    sync(sim);
    let mut keys: Vec<String> = sim.shared.lock().crs.keys().cloned().collect();
    keys.sort();
    if keys.is_empty() {
        return Err(format!("none of the CRs is reconciled by entry {entry:?}"));
    }
    let mut out = Vec::new();
    for key in keys {
        let checked = match crate::reconcile::probe(&sim.shared, &key).await {
            Ok((answer, policy)) => Checked {
                key,
                call_error: None,
                lint: ork_protocol::lint(&answer, &policy),
            },
            Err(e) => Checked {
                key,
                call_error: Some(e),
                lint: ork_protocol::Lint::default(),
            },
        };
        out.push(checked);
    }
    Ok(out)
}
