//! `ork run --metacontroller` (SPEC §15): Metacontroller's CompositeControllers and
//! DecoratorControllers, from files or watched in the cluster, each run as entries of their
//! own (a DecoratorController: one per resource type it decorates). A controller created while ork
//! runs is served from then on; one changed is restarted with its new spec; one deleted stops
//! being served. A controller ork cannot run is logged with the field and the reason, and the
//! others go on. `--target-label-selector` runs only the controllers it selects ([`select`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use ork_katalog::ApiTypes;
use ork_katalog::metacontroller::{API_VERSION, Composite, parse_controller};
use ork_remote::HttpTransport;
use serde_json::Value;
use tokio::task::AbortHandle;
use tracing::Instrument;

mod select;

pub use select::TargetSelector;

use crate::controller::{RunError, RunOptions, start_entry};
use crate::discovery::wait_for_cr_type;
use crate::runtime::Runtime;

/// A controller object's running entries.
struct Running {
    /// The spec they run (a change restarts them).
    spec: Value,
    tasks: Vec<AbortHandle>,
    entries: Vec<String>,
}

/// Metacontroller's CRDs, installed when absent.
pub(crate) const CRDS: &str = include_str!("crds.yaml");
/// The CRDs of [`CRDS`], by name: all that `--metacontroller` may install (SPEC §11).
pub(crate) const CRD_NAMES: [&str; 2] = [
    "compositecontrollers.metacontroller.k8s.io",
    "decoratorcontrollers.metacontroller.k8s.io",
];

/// Where the controllers come from.
#[derive(Debug, Clone)]
pub enum Controllers {
    /// Controller objects read from files (those a target selector selects).
    Files(Vec<Value>),
    /// The cluster's `CompositeController` and `DecoratorController` objects, watched: all, or
    /// those the target selector selects.
    Cluster(Option<TargetSelector>),
}

impl Runtime {
    /// Runs Metacontroller's controllers from `source` until the process ends.
    ///
    /// # Errors
    /// A controller file ork cannot run (with the field and the reason), or the controller
    /// watch cannot start.
    pub async fn run_controllers(
        &self,
        client: Client,
        source: Controllers,
        options: RunOptions,
    ) -> Result<(), RunError> {
        let http = HttpTransport::new()?;
        match source {
            Controllers::Files(objects) => {
                let mut tasks = tokio::task::JoinSet::new();
                for object in &objects {
                    let entries = parse_controller(object)
                        .map_err(|e| RunError::Controller(e.to_string()))?;
                    for composite in entries {
                        let serve = self.serve(
                            client.clone(),
                            Arc::new(composite),
                            http.clone(),
                            options.clone(),
                        );
                        tasks.spawn(serve);
                    }
                }
                while tasks.join_next().await.is_some() {}
                Ok(())
            }
            Controllers::Cluster(target) => {
                install_crds(&client).await?;
                self.follow(client, http, options, target).await
            }
        }
    }

    /// Watches CompositeControllers and DecoratorControllers and keeps their entries running:
    /// one per CompositeController, one per resource rule of a DecoratorController.
    async fn follow(
        &self,
        client: Client,
        http: HttpTransport,
        options: RunOptions,
        target: Option<TargetSelector>,
    ) -> Result<(), RunError> {
        // A controller whose labels stop matching leaves the watch: it is stopped as if deleted.
        let config = match &target {
            Some(t) => watcher::Config::default().labels(t.as_str()),
            None => watcher::Config::default(),
        };
        let watch = |kind: &str, plural: &str| {
            let gvk = GroupVersionKind::gvk("metacontroller.k8s.io", "v1alpha1", kind);
            let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            let kind = kind.to_string();
            watcher(api, config.clone()).map(move |e| (kind.clone(), e))
        };
        let mut events = futures::stream::select(
            watch("CompositeController", "compositecontrollers").boxed(),
            watch("DecoratorController", "decoratorcontrollers").boxed(),
        );
        let mut running: BTreeMap<(String, String), Running> = BTreeMap::new();
        while let Some((kind, event)) = events.next().await {
            let object = match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => o,
                Ok(watcher::Event::Delete(o)) => {
                    let name = o.name_any();
                    if let Some(gone) = running.remove(&(kind.clone(), name.clone())) {
                        self.stop(gone);
                        tracing::info!(controller = %name, %kind, "controller deleted; no longer served");
                    }
                    continue;
                }
                Ok(_) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, %kind, "watching Metacontroller's controllers");
                    continue;
                }
            };
            let name = object.name_any();
            let mut value = serde_json::to_value(&object).unwrap_or(Value::Null);
            if let Some(m) = value
                .pointer_mut("/metadata")
                .and_then(Value::as_object_mut)
            {
                m.remove("managedFields");
            }
            // What the controller runs by: its spec, and the annotations ork reads on it (what
            // its customize hook may relate), so a change of either restarts it.
            let spec = serde_json::json!({
                "spec": value.get("spec").cloned().unwrap_or(Value::Null),
                "annotations": value.pointer("/metadata/annotations").cloned().unwrap_or(Value::Null),
            });
            let at = (kind.clone(), name.clone());
            if running.get(&at).is_some_and(|r| r.spec == spec) {
                continue;
            }
            if let Some(changed) = running.remove(&at) {
                self.stop(changed);
                tracing::info!(controller = %name, %kind, "controller changed; restarting it");
            }
            match parse_controller(&value) {
                Ok(entries) => {
                    let mut started = Running {
                        spec,
                        tasks: Vec::new(),
                        entries: Vec::new(),
                    };
                    for composite in entries {
                        // An entry's name is what config, metrics, records and the inspector's
                        // authorization go by: a controller never takes over another's.
                        let taken = self.names().contains(&composite.entry_name)
                            || running
                                .values()
                                .any(|r| r.entries.contains(&composite.entry_name));
                        if taken {
                            tracing::error!(
                                controller = %name,
                                %kind,
                                entry = %composite.entry_name,
                                "controller not run: a Katalog entry or another controller is already named {:?}; rename one of them",
                                composite.entry_name
                            );
                            continue;
                        }
                        started.entries.push(composite.entry_name.clone());
                        let serve = self.serve(
                            client.clone(),
                            Arc::new(composite),
                            http.clone(),
                            options.clone(),
                        );
                        started.tasks.push(tokio::spawn(serve).abort_handle());
                    }
                    running.insert(at, started);
                }
                Err(e) => tracing::error!(controller = %name, error = %e, "controller not run"),
            }
        }
        Ok(())
    }

    /// Stops a controller's entries.
    fn stop(&self, running: Running) {
        for task in running.tasks {
            task.abort();
        }
        for entry in running.entries {
            self.remove_entry(&entry);
        }
    }

    /// Runs one controller: waits for its parent type, then runs its entry.
    fn serve(
        &self,
        client: Client,
        composite: Arc<Composite>,
        http: HttpTransport,
        options: RunOptions,
    ) -> impl Future<Output = ()> + Send + 'static {
        let runtime = self.clone();
        let name = composite.entry_name.clone();
        let span = tracing::info_span!("entry", entry = %name);
        async move {
            let types = ApiTypes {
                group: composite.parent_group().to_string(),
                version: composite.parent_version().to_string(),
                kind: String::new(),
                plural: composite.parent_resource.clone(),
            };
            let (parent, namespaced) = match wait_for_cr_type(&client, &types, &name).await {
                Ok(found) => found,
                Err(e) => {
                    tracing::error!(error = %e, "controller not run: its parent type");
                    return;
                }
            };
            let kind = if composite.decorator.is_some() {
                "DecoratorController"
            } else {
                "CompositeController"
            };
            let mut entry = match composite.entry(&parent.kind, namespaced, &options.ork_namespace)
            {
                Ok(entry) => entry,
                Err(e) => {
                    tracing::error!(error = %e, "{kind} not run");
                    return;
                }
            };
            entry.operator_box.reconcile.workers = options.controller_workers.max(1);
            runtime.add_entry(&name, entry.clone());
            tracing::info!(
                parent = %parent.kind,
                hooks = ?composite.version,
                workers = options.controller_workers.max(1),
                "serving {kind}"
            );
            let started = start_entry(
                client,
                name.clone(),
                entry,
                http,
                options,
                runtime.process.clone(),
                String::new(),
            )
            .await;
            if let Err(e) = started {
                tracing::error!(error = %e, "{kind} stopped");
            }
        }
        .instrument(span)
    }
}

/// Installs Metacontroller's CRDs that the cluster does not have (one it has is left as it is:
/// it may be Metacontroller's own install).
async fn install_crds(client: &Client) -> Result<(), RunError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for doc in CRDS.split("\n---\n") {
        let crd: Value = serde_saphyr::from_str(doc)
            .map_err(|e| RunError::Controller(format!("Metacontroller's CRDs: {e}")))?;
        let name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if api
            .get_opt(&name)
            .await
            .map_err(|e| RunError::Controller(e.to_string()))?
            .is_some()
        {
            continue;
        }
        crate::install::install_crd_object(client, &crd, format!("ork's {API_VERSION} CRDs"))
            .await
            .map_err(|e| RunError::Controller(e.to_string()))?;
    }
    Ok(())
}
