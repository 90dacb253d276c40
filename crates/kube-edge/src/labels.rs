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
