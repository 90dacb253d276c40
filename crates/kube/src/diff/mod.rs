//! `ork diff` (SPEC §19): what a Katalog, or a candidate endpoint, would do to every live CR of
//! an entry, found without changing anything. The entry's CRs and children are listed from the
//! cluster into the very entry state `ork run` keeps; each CR's reconcile runs as `ork run`
//! runs it (the real request to the service, the whole-answer check, the plan), over a cluster
//! whose every write is a server-side dry run and whose events are not sent. The report is read
//! from the plan and the writes the API server accepted, against what is live.
//!
//! Beside a running `ork run` it changes nothing: no write, no event, no annotation, and the
//! running entry's queue and backoff are its own. It calls the service at most `workers` at
//! once, through the entry's rate limit.

mod rehearsal;
mod report;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, ListParams};
use kube::core::{DynamicObject, TypeMeta};
use kube::discovery::ApiResource;
use kube::{Client, Resource};
use ork_engine::queue::Reason;
use ork_katalog::{CrdEntry, Katalog, Template};
use ork_remote::HttpTransport;

use crate::auth::{CredentialSource, OfflineSecrets, TransportSource};
use crate::controller::{
    EntryState, Input, InputWatch, Worker, input_watches, published, watch_scopes,
};
use crate::discovery::resolve_managed;
use crate::entry::{EntryContext, EntryError};
use crate::labels::MANAGED;
use crate::ports::{KubeCluster, Transport, for_remote};
use crate::process::Process;
use crate::simulate::world::{assemble, inputs_nobody_reads, relist_into};
use rehearsal::Rehearsal;
pub use report::{Action, ChildChange, CrDiff, EntryDiff, Report, Totals, Verdict, render};

/// What to diff, and where.
#[derive(Debug, Clone, Default)]
pub struct DiffOptions {
    /// Relative exec commands start here.
    pub katalog_dir: PathBuf,
    /// ork's namespace: its credential Secrets and its mark key.
    pub ork_namespace: String,
    /// Whether children may not go to ork's namespace unless declared, as in `ork run`.
    pub guard_own_namespace: bool,
    /// Only this entry (default: every enabled entry with a remote).
    pub entry: Option<String>,
    /// A candidate endpoint in place of the entry's own.
    pub endpoint: Option<String>,
    /// Only CRs in this namespace.
    pub namespace: Option<String>,
    /// Only CRs with these labels (a label selector).
    pub selector: Option<String>,
}

/// Why the diff could not run. A refused or failed reconcile is no error: it is in the report.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    #[error("there is no entry {name:?} in the Katalog (it has: {known})")]
    NoEntry { name: String, known: String },
    #[error("--endpoint {url:?}: {message}")]
    Endpoint { url: String, message: String },
    #[error("entry {entry}: {error}")]
    Entry { entry: String, error: EntryError },
    #[error("entry {entry}: listing {what}: {message}")]
    List {
        entry: String,
        what: String,
        message: String,
    },
    #[error("the HTTP client: {0}")]
    Client(#[from] ork_remote::CallError),
}

/// How many CRs of how many are done, for a progress line.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// Diffs every selected entry of `katalog`.
///
/// # Errors
/// An entry that cannot be set up (its CRD not served, a credential missing), an endpoint that
/// is no URL, or a list the API server refused.
pub async fn diff(
    client: Client,
    katalog: &Katalog,
    options: &DiffOptions,
    progress: Progress<'_>,
) -> Result<Report, DiffError> {
    let entries: Vec<(&String, &CrdEntry)> = katalog
        .spec
        .crds
        .iter()
        .filter(|(_, e)| e.enabled && e.operator_box.reconcile.remote.is_some())
        .collect();
    let selected: Vec<&String> = match &options.entry {
        Some(name) if entries.iter().any(|(n, _)| *n == name) => vec![name],
        Some(name) => {
            return Err(DiffError::NoEntry {
                name: name.clone(),
                known: entries
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        None => entries.iter().map(|(n, _)| *n).collect(),
    };
    let http = HttpTransport::new()?;
    let process = Arc::new(Process::new(true, crate::shard_set::ShardSet::single()));
    // Every entry a selected one reads through `observe.cross` is listed too (never run), so
    // its requests carry what `ork run`'s would.
    let mut prepared = Vec::new();
    for (name, entry) in &entries {
        let wanted = selected.contains(name);
        let read = selected.iter().any(|s| {
            katalog.spec.crds[*s]
                .operator_box
                .observe
                .cross
                .iter()
                .any(|c| c.crd == **name)
        });
        if !wanted && !read {
            continue;
        }
        let setup = Setup {
            client: &client,
            katalog,
            options,
            http: &http,
            process: &process,
        };
        prepared.push((wanted, setup.entry(name, entry, wanted).await?));
    }
    let mut report = Report::default();
    for (wanted, entry) in prepared {
        if wanted {
            report.entries.push(entry.run(options, progress).await);
        }
    }
    Ok(report)
}

/// What setting an entry up reads.
struct Setup<'a> {
    client: &'a Client,
    katalog: &'a Katalog,
    options: &'a DiffOptions,
    http: &'a HttpTransport,
    process: &'a Arc<Process>,
}

/// One entry, its CRs and children listed into its state.
struct Prepared {
    state: EntryState,
    worker: Worker,
    dry_run: Arc<KubeCluster>,
    service: String,
}

impl Setup<'_> {
    /// Resolves the entry's types, builds its transport (the candidate's with `--endpoint`)
    /// and lists its CRs (only the selected ones when `diffed`) and children into its state.
    async fn entry(
        &self,
        name: &str,
        entry: &CrdEntry,
        diffed: bool,
    ) -> Result<Prepared, DiffError> {
        let client = self.client;
        let options = self.options;
        let fail = |error: EntryError| DiffError::Entry {
            entry: name.to_string(),
            error,
        };
        let mut entry = entry.clone();
        if entry.metacontroller.is_some() {
            return Err(fail(EntryError::Offline(
                "ork diff runs Katalog entries, not Metacontroller controllers".into(),
            )));
        }
        if let (true, Some(url)) = (diffed, &options.endpoint)
            && let Some(remote) = entry.operator_box.reconcile.remote.as_mut()
        {
            let bad = |message: String| DiffError::Endpoint {
                url: url.clone(),
                message,
            };
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(bad("expected an http:// or https:// URL".into()));
            }
            remote.endpoint = Some(Template::parse(url).map_err(|e| bad(e.to_string()))?);
            remote.command = None;
        }
        let remote = entry
            .operator_box
            .reconcile
            .remote
            .clone()
            .ok_or_else(|| fail(EntryError::NoRemote))?;
        let service = match (&remote.command, &remote.endpoint) {
            (Some(command), _) => command.join(" "),
            (None, Some(endpoint)) => endpoint.source().to_string(),
            (None, None) => String::new(),
        };
        let t = &entry.api_types;
        let api_version = if t.group.is_empty() {
            t.version.clone()
        } else {
            format!("{}/{}", t.group, t.version)
        };
        let (cr_resource, namespaced) = crate::discovery::resolve(client, &api_version, &t.plural)
            .await
            .map_err(|e| fail(e.into()))?;
        let children = resolve_managed(client, &remote.managed_resources)
            .await
            .map_err(|e| fail(e.into()))?;
        let transport = if diffed {
            self.transport(&remote).map_err(fail)?
        } else {
            let credential = CredentialSource::offline(None, &OfflineSecrets::default(), "")
                .map_err(|e| fail(EntryError::Credential(e)))?;
            let tls =
                TransportSource::offline(self.http, None).map_err(|e| fail(EntryError::Tls(e)))?;
            Arc::from(
                for_remote(&remote, &options.katalog_dir, credential, tls)
                    .map_err(|e| fail(e.into()))?,
            )
        };
        // Marks are verified and made with the key every replica shares; none made yet means
        // no child carries one.
        let mark_key = if EntryContext::marks_children(&children, namespaced) {
            crate::mark::load(client, &options.ork_namespace)
                .await
                .map_err(|e| fail(EntryError::MarkKey(e)))?
                .unwrap_or_else(crate::mark::MarkKey::ephemeral)
        } else {
            crate::mark::MarkKey::ephemeral()
        };
        let ctx = Arc::new(
            EntryContext::build(
                name.to_string(),
                entry,
                cr_resource.clone(),
                namespaced,
                children,
                if options.guard_own_namespace {
                    options.ork_namespace.clone()
                } else {
                    String::new()
                },
                mark_key,
            )
            .map_err(fail)?
            .of_katalog(&self.katalog.metadata.name),
        );
        let listing = |what: String, message: String| DiffError::List {
            entry: name.to_string(),
            what,
            message,
        };
        let (selector, namespace) = if diffed {
            (options.selector.as_deref(), options.namespace.as_deref())
        } else {
            (None, None)
        };
        let mut crs = Vec::new();
        for scope in cr_scopes(&ctx, namespace) {
            crs.extend(
                list(client, &cr_resource, scope.as_deref(), selector, None)
                    .await
                    .map_err(|m| listing(format!("{} CRs", cr_resource.kind), m))?,
            );
        }
        let mut children = Vec::new();
        for t in &ctx.children {
            let mut objects = Vec::new();
            if diffed {
                for scope in watch_scopes(&ctx, t) {
                    let label = format!("{MANAGED}=true");
                    objects.extend(
                        list(client, &t.resource, scope.as_deref(), Some(&label), None)
                            .await
                            .map_err(|m| listing(t.managed.kind.clone(), m))?,
                    );
                }
            }
            children.push(objects);
        }
        let dry_run = Arc::new(KubeCluster::new(client.clone(), cr_resource).dry_run());
        let (mut state, worker, observer) =
            assemble(ctx, dry_run.clone(), transport, self.process.clone());
        relist_into(&mut state, &observer, crs, children);
        // The inputs, listed where `ork run` watches them, as its state holds them.
        for w in input_watches(client, &state.ctx().clone(), &mut state)
            .await
            .map_err(fail)?
        {
            let objects = list_named(client, &w, diffed)
                .await
                .map_err(|m| listing(w.resource.kind.clone(), m))?;
            let event = crate::inputs::InputEvent::Reset {
                namespace: w.namespace,
                name: w.name,
                objects,
            };
            let input = Input::Inputs {
                type_index: w.type_index,
                event,
                synced: None,
            };
            state.handle(input, std::time::Instant::now());
        }
        self.process
            .registry
            .register(name, published(&state, inputs_nobody_reads()));
        Ok(Prepared {
            state,
            worker,
            dry_run,
            service,
        })
    }

    /// The entry's transport as `ork run` builds it, its Secrets read before the first call.
    fn transport(&self, remote: &ork_katalog::Remote) -> Result<Arc<dyn Transport>, EntryError> {
        let ns = &self.options.ork_namespace;
        let credential = CredentialSource::start(self.client, remote.auth.as_ref(), ns)
            .map_err(EntryError::Credential)?;
        let tls = TransportSource::start(self.client, self.http, remote.tls.as_ref(), ns)
            .map_err(EntryError::Tls)?;
        Ok(Arc::from(for_remote(
            remote,
            &self.options.katalog_dir,
            credential,
            tls,
        )?))
    }
}

impl Prepared {
    /// Rehearses the reconcile of every CR listed, `workers` at once.
    async fn run(mut self, options: &DiffOptions, progress: Progress<'_>) -> EntryDiff {
        // A credential or TLS Secret is read first (a missing one fails each call, named).
        for _ in 0..100 {
            if !self.worker.transport.pending() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let ctx = self.worker.ctx.clone();
        let mut works = Vec::new();
        let mut crs = Vec::new();
        for (key, _) in self.state.take_due(std::time::Instant::now(), true) {
            // Children whose CR is gone are `ork run`'s to sweep, not a CR's change.
            let Some(mut work) = self.state.work(key.clone(), Reason::Manual) else {
                continue;
            };
            work.strays.clear();
            let Some(job) = &work.job else { continue };
            if job.cr.meta().deletion_timestamp.is_some() {
                crs.push(CrDiff::skipped(
                    key,
                    "being deleted: a finalize call is not rehearsed".into(),
                ));
                continue;
            }
            let seen = (job.cr.clone(), job.children.clone());
            works.push((work, seen));
        }
        let total = works.len() + crs.len();
        let workers = ctx.entry.operator_box.reconcile.workers.max(1) as usize;
        let kinds: Vec<String> = ctx
            .children
            .iter()
            .map(|t| t.managed.kind.clone())
            .collect();
        let worker = &self.worker;
        let dry_run = &self.dry_run;
        let kinds = &kinds;
        let mut runs = futures::stream::iter(works)
            .map(|(work, (cr, children))| async move {
                let rehearsal = Arc::new(Rehearsal::new(dry_run.clone()));
                let one = Worker {
                    ctx: worker.ctx.clone(),
                    cluster: rehearsal.clone(),
                    transport: worker.transport.clone(),
                    candidate: None,
                    live: worker.live.clone(),
                    process: worker.process.clone(),
                };
                let finished = one.run(work).await;
                let empty = crate::reconcile::Done::early(
                    Ok(crate::reconcile::Success::Deleting),
                    Default::default(),
                );
                let done = finished.done.as_ref().unwrap_or(&empty);
                if let Some(later) = &done.later {
                    later.write(rehearsal.as_ref()).await;
                }
                let journal = rehearsal.journal();
                let redact = |s: &str| worker.transport.redact(s);
                report::judge(&report::Ran {
                    key: finished.key.clone(),
                    cr: &cr,
                    children: &children,
                    done,
                    journal: &journal,
                    kinds,
                    redact: &redact,
                })
            })
            .buffer_unordered(workers);
        while let Some(cr) = runs.next().await {
            crs.push(cr);
            progress(crs.len(), total);
        }
        crs.sort_by(|a, b| a.key.cmp(&b.key));
        EntryDiff {
            entry: ctx.name.clone(),
            kind: ctx.cr_resource.kind.clone(),
            service: self.service,
            selector: options.selector.clone(),
            totals: Totals::of(&crs),
            crs,
        }
    }
}

/// Where the entry's CRs are listed: `namespace` when given (none when the entry does not
/// watch it), else the namespaces it watches, else everywhere.
fn cr_scopes(ctx: &EntryContext, namespace: Option<&str>) -> Vec<Option<String>> {
    let watched = ctx.entry.watched_namespaces();
    match namespace {
        Some(_) if !ctx.cr_namespaced => vec![None],
        Some(ns) => match watched {
            Some(homes) if !homes.iter().any(|h| h == ns) => Vec::new(),
            _ => vec![Some(ns.to_string())],
        },
        None => watched.map_or_else(|| vec![None], |h| h.into_iter().map(Some).collect()),
    }
}

/// The objects one input watch of `ork run` would see (none for an entry not diffed), as
/// JSON without `managedFields`.
async fn list_named(
    client: &Client,
    w: &InputWatch,
    diffed: bool,
) -> Result<Vec<serde_json::Value>, String> {
    if !diffed {
        return Ok(Vec::new());
    }
    let fields = w.name.as_ref().map(|name| format!("metadata.name={name}"));
    let objects = list(
        client,
        &w.resource,
        w.namespace.as_deref(),
        None,
        fields.as_deref(),
    )
    .await?;
    Ok(objects
        .into_iter()
        .map(|mut o| {
            o.metadata.managed_fields = None;
            serde_json::to_value(o).unwrap_or_default()
        })
        .collect())
}

/// Every object of `resource` in `namespace` (everywhere when `None`) with `labels` and
/// `fields`, typed (a list's items carry no apiVersion and kind).
async fn list(
    client: &Client,
    resource: &ApiResource,
    namespace: Option<&str>,
    labels: Option<&str>,
    fields: Option<&str>,
) -> Result<Vec<DynamicObject>, String> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let mut params = ListParams::default();
    if let Some(labels) = labels {
        params = params.labels(labels);
    }
    if let Some(fields) = fields {
        params = params.fields(fields);
    }
    let listed = api
        .list(&params)
        .await
        .map_err(|e| crate::ports::write::message(&e))?;
    Ok(listed
        .items
        .into_iter()
        .map(|mut o| {
            o.types = Some(TypeMeta {
                api_version: resource.api_version.clone(),
                kind: resource.kind.clone(),
            });
            o
        })
        .collect())
}
