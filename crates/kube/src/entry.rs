//! One Katalog entry compiled for running: the resolved CR and child types, compiled gates and
//! rules, and the settings a reconcile reads. Built once, immutable afterwards; the index, the
//! reconcile and the controller all borrow it.

use std::collections::BTreeSet;

use kube::core::DynamicObject;
use kube::discovery::ApiResource;
use kube::{Resource, ResourceExt};
use ork_engine::gate::CompiledGate;
use ork_katalog::{Check, CrdEntry, Remote};
use ork_protocol::{OwnerRef, Policy};

use crate::discovery::ChildType;
use crate::ports::Owner;
use crate::ports::write::group_kind;

/// Why an entry cannot start.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("the entry has no reconcile.remote block")]
    NoRemote,
    #[error(transparent)]
    NoTransport(#[from] crate::ports::NoTransport),
    #[error("gate: {0}")]
    Gate(String),
    #[error("validation rule: {0}")]
    Rule(String),
    #[error(transparent)]
    Discovery(#[from] crate::discovery::DiscoveryError),
    /// `crdFile`, `setup` or `crFiles` could not be applied.
    #[error(transparent)]
    Install(#[from] crate::install::InstallError),
    #[error("credential: {0}")]
    Credential(crate::auth::AuthError),
    #[error("TLS: {0}")]
    Tls(crate::auth::AuthError),
    /// The key of ownership marks (SPEC §11) cannot be read or created.
    #[error("ownership mark key: {0}")]
    MarkKey(String),
    /// `ork simulate`: a type that cannot be resolved without an API server.
    #[error("{0}")]
    Offline(String),
    /// The admission webhook could not be set up (its transport, its registration).
    #[error("admission: {0}")]
    Admission(String),
}

/// An entry ready to run.
#[derive(Debug)]
pub(crate) struct EntryContext {
    pub name: String,
    pub entry: CrdEntry,
    pub remote: Remote,
    pub cr_resource: ApiResource,
    /// The CRs are namespaced (from discovery, or the Katalog offline).
    pub cr_namespaced: bool,
    pub children: Vec<ChildType>,
    pub reconcile_gate: Option<CompiledGate>,
    pub enqueue_gate: Option<CompiledGate>,
    pub rules: Vec<Check>,
    /// The CR needs ork's finalizer: children garbage collection cannot reach, or finalize calls.
    pub needs_finalizer: bool,
    /// ork's own namespace (off limits to children unless declared).
    pub ork_namespace: String,
    /// Force server-side apply conflicts (entry default; a resource may say otherwise).
    pub force: bool,
    /// The label and annotation keys ork writes on the CR (the entry's `labels`/`annotations`):
    /// not a user's change.
    pub own_metadata: BTreeSet<String>,
    /// The fingerprint of the entry's configuration in each CR's seal ([`crate::seal`]).
    pub config_seal: u64,
    /// `Kind.group` of the CRs, as ork marks the children no owner reference covers
    /// ([`crate::labels::OWNER_KIND`]).
    pub owner_kind: String,
    /// Makes and checks the ownership marks of those children ([`crate::mark`]).
    pub mark_key: crate::mark::MarkKey,
    /// What [`crate::labels::MANAGED_BY`] says: the Katalog's name ([`Self::of_katalog`]), else
    /// the entry's.
    pub managed_by: String,
    /// The finalizer ork puts on CRs that need one: its own, or a Metacontroller controller's.
    pub finalizer: String,
    /// A Metacontroller controller's finalize and customize hooks, when it has them
    /// ([`Self::with_hooks`]).
    pub hooks: Hooks,
    /// The related objects its customize hook asks for, watched ([`Self::with_hooks`]).
    pub related: Option<std::sync::Arc<crate::related::Related>>,
}

/// The hooks of a Metacontroller controller besides sync (SPEC §15).
#[derive(Default, Clone)]
pub(crate) struct Hooks {
    /// Called instead of the sync hook while the parent is being deleted.
    pub finalize: Option<std::sync::Arc<dyn crate::ports::Transport>>,
    /// Asked which related objects a parent's requests carry.
    pub customize: Option<std::sync::Arc<dyn crate::ports::Transport>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("finalize", &self.finalize.is_some())
            .field("customize", &self.customize.is_some())
            .finish()
    }
}

impl EntryContext {
    /// Compiles `entry` with its resolved types.
    ///
    /// # Errors
    /// No remote block, or a gate or rule that does not compile (only when the Katalog was not
    /// validated).
    pub fn build(
        name: String,
        entry: CrdEntry,
        cr_resource: ApiResource,
        cr_namespaced: bool,
        children: Vec<ChildType>,
        ork_namespace: String,
        mark_key: crate::mark::MarkKey,
    ) -> Result<EntryContext, EntryError> {
        let remote = entry
            .operator_box
            .reconcile
            .remote
            .clone()
            .ok_or(EntryError::NoRemote)?;
        let pre = &entry.operator_box.pre_reconcile;
        let gate = |g: Option<&ork_katalog::Gate>| {
            g.map(CompiledGate::compile)
                .transpose()
                .map_err(EntryError::Gate)
        };
        let reconcile_gate = gate(pre.reconcile_gate.as_ref())?;
        let enqueue_gate = gate(pre.enqueue_gate.as_ref())?;
        let rules = entry
            .operator_box
            .validation
            .rules
            .iter()
            .map(|r| r.compile().map_err(|e| EntryError::Rule(format!("{e:?}"))))
            .collect::<Result<Vec<_>, _>>()?;
        // A cluster-scoped CR cannot own namespaced children through garbage collection, and
        // children in other namespaces or cluster-scoped ones are out of its reach too.
        let needs_finalizer =
            remote.finalize || EntryContext::marks_children(&children, cr_namespaced);
        let finalizer = entry
            .metacontroller
            .as_ref()
            .map_or_else(|| crate::labels::FINALIZER.to_string(), |c| c.finalizer());
        let force = entry
            .operator_box
            .reconcile
            .force_conflict
            .or(entry.force_conflict)
            .unwrap_or(true);
        let own_metadata = entry
            .labels
            .keys()
            .chain(entry.annotations.keys())
            .cloned()
            .collect();
        let config_seal = crate::seal::config_fingerprint(&remote);
        Ok(EntryContext {
            config_seal,
            finalizer,
            hooks: Hooks::default(),
            related: None,
            mark_key,
            managed_by: name.clone(),
            owner_kind: group_kind(&cr_resource.kind, &cr_resource.api_version),
            own_metadata,
            name,
            remote,
            cr_resource,
            cr_namespaced,
            children,
            reconcile_gate,
            enqueue_gate,
            rules,
            needs_finalizer,
            ork_namespace,
            force,
            entry,
        })
    }

    /// The entry as part of the Katalog named `katalog` (nothing changes when it has no name).
    pub fn of_katalog(mut self, katalog: &str) -> EntryContext {
        if !katalog.is_empty() {
            self.managed_by = katalog.to_string();
        }
        self
    }

    /// The entry with a Metacontroller controller's other hooks.
    pub fn with_hooks(
        mut self,
        hooks: Hooks,
        related: Option<std::sync::Arc<crate::related::Related>>,
    ) -> EntryContext {
        self.hooks = hooks;
        self.related = related;
        self
    }

    /// Whether `e`, failing the `attempt`th call of its series, leaves ork nothing to retry
    /// (kstatus `Stalled`): a failure no retry helps, or the last of `queue.maxAttempts`
    /// (the CR then waits for its next change or resync).
    pub fn stalls(&self, e: &crate::error::ReconcileError, attempt: u32) -> bool {
        let last = self
            .entry
            .operator_box
            .reconcile
            .queue
            .max_attempts()
            .is_some_and(|max| attempt >= max);
        e.stalls() || (last && e.retry() == crate::error::Retry::Backoff)
    }

    /// The Metacontroller controller this entry runs, if it runs one.
    pub fn composite(&self) -> Option<&ork_katalog::metacontroller::Composite> {
        self.entry.metacontroller.as_deref()
    }

    /// The entry's `remote` with a Metacontroller hook's URL and timeout: how ork calls that
    /// hook (the sync hook is the entry's endpoint; finalize and customize go through this).
    ///
    /// # Errors
    /// The hook's URL is not an endpoint, or its timeout not a duration.
    pub fn hook_remote(
        remote: &ork_katalog::Remote,
        hook: &ork_katalog::metacontroller::Hook,
    ) -> Result<ork_katalog::Remote, EntryError> {
        let mut remote = remote.clone();
        remote.endpoint = Some(
            ork_katalog::Template::parse(&hook.url)
                .map_err(|e| EntryError::Offline(format!("hook URL {}: {e:?}", hook.url)))?,
        );
        remote.timeout = format!("{}ms", hook.timeout.as_millis().max(1))
            .parse()
            .map_err(|e| EntryError::Offline(format!("hook timeout: {e:?}")))?;
        Ok(remote)
    }

    /// Whether some children are beyond an owner reference's reach (another namespace,
    /// cluster-scoped, or namespaced children of a cluster-scoped CR): they carry ork's mark.
    pub fn marks_children(children: &[ChildType], cr_namespaced: bool) -> bool {
        children.iter().any(|c| {
            c.managed.cluster_scoped
                || !c.managed.namespaces.is_empty()
                || (!cr_namespaced && c.managed.namespaced)
        })
    }

    /// The child type of `group`/`kind`, by index.
    pub fn child_index(&self, group: &str, kind: &str) -> Option<usize> {
        self.children
            .iter()
            .position(|c| c.managed.group == group && c.managed.kind == kind)
    }

    /// The CR as owner of its children.
    pub fn owner(&self, cr: &DynamicObject) -> Option<Owner> {
        Some(Owner {
            entry: self.name.clone(),
            reference: OwnerRef {
                api_version: self.cr_resource.api_version.clone(),
                kind: self.cr_resource.kind.clone(),
                name: cr.name_any(),
                namespace: cr.namespace(),
            },
            uid: cr.meta().uid.clone()?,
            key: self.mark_key.clone(),
        })
    }

    /// What an answer for the CR `owner` must satisfy, as the Katalog declares it (a protocol
    /// may add to it: `reconcile::protocol`).
    pub fn policy(&self, owner: &Owner) -> Policy {
        Policy::new(
            owner.reference.clone(),
            self.children.iter().map(|c| c.managed.clone()).collect(),
            self.ork_namespace.clone(),
        )
    }
}
