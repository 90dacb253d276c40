//! Labels and annotations ork puts on what it manages.

pub const MANAGED: &str = "orkestra.orkspace.io/managed";
/// On CRs and children, as Orkestra writes them (tools built for Orkestra select on them): the
/// Katalog that manages the object (its `metadata.name`, else the entry's name)…
pub const MANAGED_BY: &str = "orkestra.orkspace.io/managed-by";
/// …and since when (RFC 3339, UTC, seconds), written once. Both ride on writes ork makes anyway:
/// an object ork has no other reason to write does not get them.
pub const MANAGED_SINCE: &str = "orkestra.orkspace.io/managed-since";
pub const OWNER_UID: &str = "orkestra.orkspace.io/owner-uid";
pub const OWNER: &str = "orkestra.orkspace.io/owner";
/// On a child no owner reference covers (another namespace, cluster-scoped): the owner's kind
/// and group (`Kind.group`), so that ork sweeps such a child only for a CR of its own type: an
/// entry of the same name in another ork, for another CRD, names its CRs alike.
pub const OWNER_KIND: &str = "orkestra.orkspace.io/owner-kind";
/// On a child no owner reference covers: ork's HMAC over the owner and the child
/// (made in `mark.rs`), the only evidence of ownership such a child has (SPEC §11).
pub const OWNER_MARK: &str = "orkestra.orkspace.io/owner-mark";
/// On a CR, set by `ork retry` or by hand (any new value, e.g. a timestamp): reconcile it now,
/// its backoff started over (SPEC §14).
pub const REQUESTED_AT: &str = "orkestra.orkspace.io/requested-at";
pub const HEALTH: &str = "orkestra.orkspace.io/health";
pub const METRICS: &str = "orkestra.orkspace.io/metrics";
/// On a child: fingerprint of the object ork last applied, so an unchanged answer costs no write
/// (also across restarts) while a field the service drops is still removed.
pub const APPLIED: &str = "orkestra.orkspace.io/applied";
/// Annotations and labels under this prefix are ork's own marks, not a user's change.
pub const PREFIX: &str = "orkestra.orkspace.io/";
pub const FIELD_MANAGER: &str = "orkestra-remote";
pub const FINALIZER: &str = "orkestra.orkspace.io/remote-finalizer";
/// The finalizers of ork's predecessor: Orkestra puts the first on every CR it manages (its
/// generic reconciler the second), and inrun, as Orkestra was renamed, the last two. A CR that
/// comes to ork carrying one would never go, so ork takes them over as its own: on a live CR it
/// puts its own finalizer in their place (or none, when the entry needs none), and on a CR being
/// deleted it does its own deletion and then removes them.
pub const PREDECESSOR_FINALIZERS: [&str; 4] = [
    "orkestra.orkspace.io/finalizer",
    "orkestra.orkspace.io/cleanup",
    "inrun.dev/finalizer",
    "inrun.dev/cleanup",
];

/// Where a mark of ork's sits, for the reference (`docs/reference/observability.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    Label,
    Annotation,
    Finalizer,
    FieldManager,
}

/// One label, annotation, finalizer or field manager ork writes or reads.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    pub name: &'static str,
    pub kind: MarkKind,
    /// What it sits on: `CR`, `child`, `Lease`.
    pub on: &'static str,
    pub meaning: &'static str,
}

const fn mark(name: &'static str, kind: MarkKind, on: &'static str, meaning: &'static str) -> Mark {
    Mark {
        name,
        kind,
        on,
        meaning,
    }
}

/// Every mark ork puts on what it manages, in the reference's order.
pub const MARKS: &[Mark] = &[
    mark(
        MANAGED,
        MarkKind::Label,
        "child",
        "`true` on every child ork applied; ork watches children by this label.",
    ),
    mark(
        OWNER_UID,
        MarkKind::Label,
        "child",
        "The owning CR's UID; children are indexed to their CR by it.",
    ),
    mark(
        OWNER,
        MarkKind::Annotation,
        "child",
        "The owner as `<entry>/<namespace>/<name>`.",
    ),
    mark(
        OWNER_KIND,
        MarkKind::Annotation,
        "child",
        "On a child no owner reference can cover (another namespace, cluster-scoped): the owner's `Kind.group`.",
    ),
    mark(
        OWNER_MARK,
        MarkKind::Annotation,
        "child",
        "On a child no owner reference can cover: ork's HMAC-SHA256 over owner and child, keyed by the Secret `orkestra-konductor-owner-key`; without a valid mark such a child is not the CR's.",
    ),
    mark(
        APPLIED,
        MarkKind::Annotation,
        "child",
        "Fingerprint of what ork last applied: an unchanged answer costs no write, also across restarts.",
    ),
    mark(
        MANAGED_BY,
        MarkKind::Annotation,
        "CR, child",
        "The Katalog managing the object (its `metadata.name`, else the entry's name), as Orkestra writes it; rides on writes ork makes anyway.",
    ),
    mark(
        MANAGED_SINCE,
        MarkKind::Annotation,
        "CR, child",
        "Since when ork manages the object (RFC 3339, UTC), written once.",
    ),
    mark(
        HEALTH,
        MarkKind::Annotation,
        "CR",
        "JSON: `state` (`healthy` or `failing`), `consecutiveFailures` and `lastError` of the CR's last reconcile; rewritten only when it changes.",
    ),
    mark(
        METRICS,
        MarkKind::Annotation,
        "CR",
        "JSON: `lastResult`, `lastDurationMs`, `reconcileCount` and `seal` (what the last successful reconcile saw, so a restart skips an unchanged CR); rewritten only when the result or seal changes.",
    ),
    mark(
        REQUESTED_AT,
        MarkKind::Annotation,
        "CR",
        "Written by you or `ork retry` (any new value, e.g. a timestamp): reconcile the CR now, its backoff started over.",
    ),
    mark(
        FINALIZER,
        MarkKind::Finalizer,
        "CR",
        "With `remote.finalize: true`: held until the service answers a finalize call with `finalized: true` and ork has deleted the CR's children. Metacontroller entries use `metacontroller.io/compositecontroller-<name>` or `…/decoratorcontroller-<name>` instead.",
    ),
    mark(
        PREDECESSOR_FINALIZERS[0],
        MarkKind::Finalizer,
        "CR",
        "Orkestra's, on every CR it managed: ork takes it over. On a live CR ork puts its own finalizer in its place when the entry needs one and removes it when not; on a CR being deleted ork does its own deletion (finalize call, children), then removes it. The same for `orkestra.orkspace.io/cleanup`, `inrun.dev/finalizer` and `inrun.dev/cleanup`.",
    ),
    mark(
        FIELD_MANAGER,
        MarkKind::FieldManager,
        "child",
        "The field manager of ork's server-side applies of children.",
    ),
    mark(
        crate::lease::GROUP_LABEL,
        MarkKind::Label,
        "Lease",
        "On the leader and shard Leases (value `orkestra-konductor`), so replicas find each other's Leases.",
    ),
];
