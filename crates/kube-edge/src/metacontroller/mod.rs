//! `ork run --metacontroller` (SPEC §15): Metacontroller's CompositeControllers, from files or
//! watched in the cluster, each run as an entry of its own. A controller created while ork
//! runs is served from then on; one changed is restarted with its new spec; one deleted stops
//! being served. A controller ork cannot run is logged with the field and the reason, and the
//! others go on.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use ork_katalog::ApiTypes;
use ork_katalog::metacontroller::{API_VERSION, Composite};
use ork_remote::HttpTransport;
use serde_json::Value;
use tokio::task::AbortHandle;
use tracing::Instrument;

use crate::controller::{RunError, RunOptions, start_entry};
use crate::discovery::wait_for_cr_type;
use crate::runtime::Runtime;

/// Metacontroller's CRDs, installed when absent.
const CRDS: &str = include_str!("crds.yaml");

/// Where the controllers come from.
#[derive(Debug, Clone)]
pub enum Controllers {
    /// Controller objects read from files.
    Files(Vec<Value>),
    /// The cluster's `CompositeController` objects, watched.
    Cluster,
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
                    let composite = Composite::parse(object)
                        .map_err(|e| RunError::Controller(e.to_string()))?;
                    let serve = self.serve(
                        client.clone(),
                        Arc::new(composite),
                        http.clone(),
                        options.clone(),
                    );
                    tasks.spawn(serve);
                }
                while tasks.join_next().await.is_some() {}
                Ok(())
            }
            Controllers::Cluster => {
                install_crds(&client).await?;
                self.follow(client, http, options).await
            }
        }
    }

    /// Watches CompositeControllers and keeps one entry running per controller.
    async fn follow(
        &self,
        client: Client,
        http: HttpTransport,
        options: RunOptions,
    ) -> Result<(), RunError> {
        let gvk = GroupVersionKind::gvk("metacontroller.k8s.io", "v1alpha1", "CompositeController");
        let resource = ApiResource::from_gvk_with_plural(&gvk, "compositecontrollers");
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let mut running: BTreeMap<String, (Value, AbortHandle)> = BTreeMap::new();
        let mut events = watcher(api, watcher::Config::default()).boxed();
        while let Some(event) = events.next().await {
            let object = match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => o,
                Ok(watcher::Event::Delete(o)) => {
                    let name = o.name_any();
                    if let Some((_, task)) = running.remove(&name) {
                        task.abort();
                        self.remove_entry(&name);
                        tracing::info!(controller = %name, "CompositeController deleted; no longer served");
                    }
                    continue;
                }
                Ok(_) => continue,
                Err(e) => {
                    tracing::warn!(error = %e, "watching CompositeControllers");
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
            let spec = value.get("spec").cloned().unwrap_or(Value::Null);
            if running.get(&name).is_some_and(|(s, _)| *s == spec) {
                continue;
            }
            if let Some((_, task)) = running.remove(&name) {
                task.abort();
                self.remove_entry(&name);
                tracing::info!(controller = %name, "CompositeController changed; restarting it");
            }
            match Composite::parse(&value) {
                Ok(composite) => {
                    let serve = self.serve(
                        client.clone(),
                        Arc::new(composite),
                        http.clone(),
                        options.clone(),
                    );
                    let task = tokio::spawn(serve);
                    running.insert(name, (spec, task.abort_handle()));
                }
                Err(e) => {
                    tracing::error!(controller = %name, error = %e, "CompositeController not run")
                }
            }
        }
        Ok(())
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
        let name = composite.name.clone();
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
                    tracing::error!(error = %e, "CompositeController not run: its parent type");
                    return;
                }
            };
            let entry = match composite.entry(&parent.kind, namespaced) {
                Ok(entry) => entry,
                Err(e) => {
                    tracing::error!(error = %e, "CompositeController not run");
                    return;
                }
            };
            runtime.add_entry(&name, entry.clone());
            tracing::info!(parent = %parent.kind, hooks = ?composite.version, "serving CompositeController");
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
                tracing::error!(error = %e, "CompositeController stopped");
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
