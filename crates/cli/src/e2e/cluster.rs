//! What the E2E steps read and write in the cluster, through the API server (no `kubectl`):
//! kinds resolved by discovery, objects got, listed, patched, applied and deleted, events,
//! pod logs and access reviews — each answer as the text Orkestra's assertions compare.

use std::path::Path;

use anyhow::{Context, Result, bail};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec, SubjectAccessReview,
    SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, LogParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject};
use kube::discovery::{Discovery, Scope};
use serde_json::Value;
use tokio::sync::Mutex;

/// Orkestra's namespace when an entry names none.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A client and what the API server serves (discovered again when a kind is not found: a CRD
/// the run installed).
pub struct Cluster {
    pub client: Client,
    discovery: Mutex<Option<Discovery>>,
}

impl Cluster {
    pub fn new(client: Client) -> Cluster {
        Cluster {
            client,
            discovery: Mutex::new(None),
        }
    }

    /// The resource a kind names: `Deployment`, `deployments`, `webapp` or `WebApp.group`.
    ///
    /// # Errors
    /// Discovery fails or the API server serves no such kind.
    pub async fn resolve(&self, kind: &str) -> Result<(ApiResource, Scope)> {
        let wanted = kind.to_lowercase();
        let (name, group) = wanted.split_once('.').unwrap_or((&wanted, ""));
        for fresh in [false, true] {
            let mut guard = self.discovery.lock().await;
            if fresh || guard.is_none() {
                let d = Discovery::new(self.client.clone())
                    .run()
                    .await
                    .context("discovering the API server's types")?;
                *guard = Some(d);
            }
            let Some(d) = guard.as_ref() else { continue };
            let found = d
                .groups()
                .flat_map(|g| g.recommended_resources())
                .find(|(r, _)| {
                    (r.kind.to_lowercase() == name || r.plural == name)
                        && (group.is_empty() || r.group == group)
                });
            if let Some((r, caps)) = found {
                return Ok((r, caps.scope));
            }
        }
        bail!("the API server serves no kind {kind:?}")
    }

    async fn api(
        &self,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<(Api<DynamicObject>, Scope)> {
        let (ar, scope) = self.resolve(kind).await?;
        let api = match scope {
            Scope::Cluster => Api::all_with(self.client.clone(), &ar),
            Scope::Namespaced => Api::namespaced_with(
                self.client.clone(),
                namespace.unwrap_or(DEFAULT_NAMESPACE),
                &ar,
            ),
        };
        Ok((api, scope))
    }

    /// One object, or `None` when it does not exist.
    ///
    /// # Errors
    /// The kind is unknown or the API server refuses.
    pub async fn get(&self, kind: &str, name: &str, ns: Option<&str>) -> Result<Option<Value>> {
        let (api, _) = self.api(kind, ns).await?;
        let obj = api
            .get_opt(name)
            .await
            .with_context(|| format!("getting {kind} {name}"))?;
        obj.map(serde_json::to_value)
            .transpose()
            .map_err(Into::into)
    }

    /// The objects of a kind in a namespace, optionally by label selector.
    ///
    /// # Errors
    /// The kind is unknown or the API server refuses.
    pub async fn list(
        &self,
        kind: &str,
        ns: Option<&str>,
        selector: Option<&str>,
    ) -> Result<Vec<Value>> {
        let (api, _) = self.api(kind, ns).await?;
        let mut params = ListParams::default();
        if let Some(s) = selector {
            params = params.labels(s);
        }
        let list = api
            .list(&params)
            .await
            .with_context(|| format!("listing {kind}"))?;
        list.items
            .into_iter()
            .map(|o| serde_json::to_value(o).map_err(Into::into))
            .collect()
    }

    /// Patches one object: `merge` (default), `strategic` or `json`; the patch as JSON or YAML.
    ///
    /// # Errors
    /// The patch is not JSON/YAML, the type is unknown, or the API server refuses.
    pub async fn patch(
        &self,
        kind: &str,
        name: &str,
        ns: Option<&str>,
        kind_of_patch: Option<&str>,
        text: &str,
    ) -> Result<()> {
        let (api, _) = self.api(kind, ns).await?;
        let value: Value = serde_json::from_str(text)
            .or_else(|_| serde_saphyr::from_str(text))
            .with_context(|| format!("the patch of {kind} {name} is neither JSON nor YAML"))?;
        let patch = match kind_of_patch.unwrap_or("merge") {
            "merge" => Patch::Merge(value),
            "strategic" => Patch::Strategic(value),
            "json" => Patch::Json(
                serde_json::from_value(value).context("a JSON patch is a list of operations")?,
            ),
            other => bail!("patch type {other:?}: expected merge, strategic or json"),
        };
        api.patch(name, &PatchParams::default(), &patch)
            .await
            .with_context(|| format!("patching {kind} {name}"))?;
        Ok(())
    }

    /// Server-side applies every object of a file; namespaced objects without one go to `ns`.
    ///
    /// # Errors
    /// The first object that cannot be read or applied.
    pub async fn apply_file(&self, file: &Path, ns: Option<&str>) -> Result<usize> {
        Ok(ork_kube::install::apply_files(
            &self.client,
            &[file.to_path_buf()],
            ns.unwrap_or(DEFAULT_NAMESPACE),
        )
        .await?)
    }

    /// Deletes one object.
    ///
    /// # Errors
    /// The API server refuses, or the object does not exist and `ignore_not_found` is false.
    pub async fn delete(
        &self,
        kind: &str,
        name: &str,
        ns: Option<&str>,
        ignore_not_found: bool,
    ) -> Result<()> {
        let (api, _) = self.api(kind, ns).await?;
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 && ignore_not_found => Ok(()),
            Err(e) => Err(e).with_context(|| format!("deleting {kind} {name}")),
        }
    }

    /// Deletes every object of a file.
    ///
    /// # Errors
    /// The file cannot be read or a delete is refused.
    pub async fn delete_file(&self, file: &Path, ignore_not_found: bool) -> Result<()> {
        for doc in ork_kube::install::documents(file)? {
            let (Some(kind), Some(name)) = (
                doc["kind"].as_str(),
                doc.pointer("/metadata/name").and_then(Value::as_str),
            ) else {
                continue;
            };
            let ns = doc.pointer("/metadata/namespace").and_then(Value::as_str);
            // The kind of the object's own group: another group may serve the same kind (a
            // bare `WebApp` found the first one, and the delete missed).
            let kind = match doc["apiVersion"].as_str().and_then(|v| v.split_once('/')) {
                Some((group, _)) => format!("{kind}.{group}"),
                None => kind.to_string(),
            };
            self.delete(&kind, name, ns, ignore_not_found).await?;
        }
        Ok(())
    }

    /// The events of one object, one line each: `TYPE REASON: MESSAGE`, oldest first.
    ///
    /// # Errors
    /// The API server refuses.
    pub async fn events(&self, kind: &str, name: &str, ns: Option<&str>) -> Result<String> {
        let (ar, scope) = self.resolve(kind).await?;
        let api: Api<Event> = match scope {
            Scope::Namespaced => {
                Api::namespaced(self.client.clone(), ns.unwrap_or(DEFAULT_NAMESPACE))
            }
            Scope::Cluster => Api::all(self.client.clone()),
        };
        let selector = format!("involvedObject.kind={},involvedObject.name={name}", ar.kind);
        let mut items = api
            .list(&ListParams::default().fields(&selector))
            .await
            .with_context(|| format!("listing the events of {kind} {name}"))?
            .items;
        items.sort_by_key(|e| e.last_timestamp.clone().map(|t| t.0));
        Ok(items
            .iter()
            .map(|e| {
                format!(
                    "{} {}: {}",
                    e.type_.as_deref().unwrap_or("-"),
                    e.reason.as_deref().unwrap_or("-"),
                    e.message.as_deref().unwrap_or("")
                )
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }

    /// An object as YAML followed by its events: what ork offers for `kubectl describe`.
    ///
    /// # Errors
    /// The API server refuses.
    pub async fn describe(
        &self,
        kind: &str,
        name: Option<&str>,
        selector: Option<&str>,
        ns: Option<&str>,
    ) -> Result<String> {
        let objects = match name {
            Some(n) => self.get(kind, n, ns).await?.into_iter().collect(),
            None => self.list(kind, ns, selector).await?,
        };
        if objects.is_empty() {
            bail!(
                "no {kind} {} in {}",
                name.unwrap_or(selector.unwrap_or("")),
                ns.unwrap_or(DEFAULT_NAMESPACE)
            );
        }
        let mut out = String::new();
        for mut o in objects {
            if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove("managedFields");
            }
            let n = o
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            out.push_str(&serde_saphyr::to_string(&o).unwrap_or_default());
            out.push_str("Events:\n");
            for line in self.events(kind, &n, ns).await?.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
        Ok(out)
    }

    /// The logs of a pod by name, or of every pod a selector picks, concatenated.
    ///
    /// # Errors
    /// No pod matches, or the API server refuses.
    pub async fn logs(
        &self,
        name: Option<&str>,
        selector: Option<&str>,
        ns: Option<&str>,
        container: Option<&str>,
        since: Option<std::time::Duration>,
    ) -> Result<String> {
        let ns = ns.unwrap_or(DEFAULT_NAMESPACE);
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let names: Vec<String> = match (name, selector) {
            (Some(n), _) => vec![n.to_string()],
            (None, Some(s)) => pods
                .list(&ListParams::default().labels(s))
                .await?
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect(),
            (None, None) => bail!("logs: give name or labelSelector"),
        };
        if names.is_empty() {
            bail!("no pod in {ns} matches {}", selector.unwrap_or_default());
        }
        let params = LogParams {
            container: container.map(str::to_string),
            since_seconds: since.map(|d| d.as_secs() as i64),
            ..LogParams::default()
        };
        let mut out = String::new();
        for n in names {
            out.push_str(
                &pods
                    .logs(&n, &params)
                    .await
                    .with_context(|| format!("logs of pod {ns}/{n}"))?,
            );
        }
        Ok(out)
    }

    /// `yes` or `no`: may `user` (or the current identity) do `verb` on `resource`.
    ///
    /// # Errors
    /// The API server refuses the review.
    pub async fn can_i(
        &self,
        verb: &str,
        resource: &str,
        ns: Option<&str>,
        user: Option<&str>,
    ) -> Result<String> {
        let (resource, group) = match resource.split_once('.') {
            Some((r, g)) => (r.to_string(), Some(g.to_string())),
            None => (resource.to_string(), None),
        };
        let attributes = ResourceAttributes {
            verb: Some(verb.to_string()),
            resource: Some(resource),
            group,
            namespace: ns.map(str::to_string),
            ..ResourceAttributes::default()
        };
        let allowed = match user {
            None => {
                let review = SelfSubjectAccessReview {
                    spec: SelfSubjectAccessReviewSpec {
                        resource_attributes: Some(attributes),
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let api: Api<SelfSubjectAccessReview> = Api::all(self.client.clone());
                api.create(&PostParams::default(), &review)
                    .await?
                    .status
                    .is_some_and(|s| s.allowed)
            }
            Some(user) => {
                let groups = user
                    .strip_prefix("system:serviceaccount:")
                    .and_then(|rest| rest.split_once(':'))
                    .map(|(ns, _)| {
                        vec![
                            "system:serviceaccounts".to_string(),
                            format!("system:serviceaccounts:{ns}"),
                            "system:authenticated".to_string(),
                        ]
                    });
                let review = SubjectAccessReview {
                    spec: SubjectAccessReviewSpec {
                        resource_attributes: Some(attributes),
                        user: Some(user.to_string()),
                        groups,
                        ..Default::default()
                    },
                    ..Default::default()
                };
                let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
                api.create(&PostParams::default(), &review)
                    .await?
                    .status
                    .is_some_and(|s| s.allowed)
            }
        };
        Ok(if allowed { "yes" } else { "no" }.to_string())
    }
}

/// The text of a JSONPath field as `kubectl -o jsonpath` prints it: strings bare, other values
/// as JSON; `None` when a step of the path is missing. Reads `.a.b[0].c`, `{.a.b}` and
/// `.metadata.labels['app.kubernetes.io/name']`.
pub fn field(obj: &Value, path: &str) -> Option<String> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut cur = obj;
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                cur = cur.get(&r[..end])?;
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let key = &r[..end];
            let quoted = key.trim_matches(|c| c == '\'' || c == '"');
            cur = match key.parse::<usize>() {
                Ok(i) => cur.get(i)?,
                Err(_) => cur.get(quoted)?,
            };
            rest = &r[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            cur = cur.get(&rest[..end])?;
            rest = &rest[end..];
        }
    }
    Some(match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_reads_jsonpath_as_kubectl_prints_it() {
        let o = json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [{"image": "nginx:1.27"}]}}},
                       "metadata": {"labels": {"app.kubernetes.io/name": "x"}}});
        assert_eq!(field(&o, ".spec.replicas").as_deref(), Some("2"));
        assert_eq!(
            field(&o, "{.spec.template.spec.containers[0].image}").as_deref(),
            Some("nginx:1.27")
        );
        assert_eq!(
            field(&o, ".metadata.labels['app.kubernetes.io/name']").as_deref(),
            Some("x")
        );
        assert_eq!(field(&o, ".status.phase"), None);
    }
}
