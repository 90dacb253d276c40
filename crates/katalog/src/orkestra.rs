//! How each Katalog field relates to Orkestra's Katalog, for the reference: read the same way,
//! read with a difference (named), or an ork addition. Fields Orkestra has and ork refuses are
//! [`crate::REFUSED_FIELDS`]. A field added to the model is an addition until it is listed
//! here as Orkestra's.

/// A field's relation to Orkestra's Katalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orkestra {
    Same,
    Differs(&'static str),
    Ork,
}

/// Orkestra's fields of the file, outside `spec.crds` (`*` ends a prefix).
const FILE: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata*",
    "spec",
    "notes",
    "notes.functions",
    "notes.functions[].name",
    "notes.functions[].expression",
    "notes.functions[].description",
];

/// Orkestra's fields of an entry, relative to `spec.crds.<key>`, and of the types used in
/// several places (`Condition.field`) (`*` ends a prefix).
const ENTRY: &[&str] = &[
    "enabled",
    "description",
    "mode",
    "crdFile",
    "crFiles",
    "setup*",
    "apiTypes*",
    "namespaced",
    "namespace",
    "dependsOn*",
    "labels",
    "annotations",
    "labelSelector",
    "fieldSelector",
    "allowedNamespaces",
    "restrictedNamespaces",
    "endpoints*",
    "forceConflict",
    "operatorBox",
    "operatorBox.runtime*",
    "operatorBox.validation*",
    "operatorBox.observe*",
    "operatorBox.preReconcile*",
    "operatorBox.reconcile",
    "operatorBox.reconcile.default",
    "operatorBox.reconcile.workers",
    "operatorBox.reconcile.resync",
    "operatorBox.reconcile.forceConflict",
    "operatorBox.reconcile.queue",
    "operatorBox.reconcile.queue.failureThreshold",
    "operatorBox.reconcile.queue.retryBackoff*",
    "operatorBox.reconcile.remote",
    "operatorBox.reconcile.remote.endpoint",
    "operatorBox.reconcile.remote.type",
    "operatorBox.reconcile.remote.timeout",
    "operatorBox.reconcile.remote.args",
    "operatorBox.reconcile.remote.auth*",
    "operatorBox.reconcile.remote.managedResources",
    "operatorBox.reconcile.remote.managedResources[].group",
    "operatorBox.reconcile.remote.managedResources[].version",
    "operatorBox.reconcile.remote.managedResources[].plural",
    "operatorBox.reconcile.remote.managedResources[].kind",
    "operatorBox.reconcile.remote.managedResources[].apiVersion",
    "operatorBox.reconcile.remote.managedResources[].name",
    "operatorBox.reconcile.remote.managedResources[].namespace",
    "operatorBox.reconcile.remote.payload",
    "operatorBox.reconcile.remote.payload.object*",
    "operatorBox.reconcile.remote.payload.children",
    "operatorBox.reconcile.remote.payload.children.enabled",
    "operatorBox.reconcile.remote.payload.children.exclude",
    "operatorBox.reconcile.remote.payload.children.resources*",
    "Condition.*",
    "SetupWait.*",
    "Gate.when",
    "Gate.or",
    "Gate.sentinels",
    "Gate.failPolicy",
];

/// Orkestra's fields that ork reads differently, relative to the entry, with the difference
/// (the migration guide's table says how to get Orkestra's behaviour).
const DIFFERS: &[(&str, &str)] = &[
    (
        "mode",
        "only `dynamic` (ork watches custom resources dynamically); `typed` is refused.",
    ),
    ("crdFile", "a local file; a URL is refused."),
    (
        "endpoints*",
        "accepted and without effect: ork serves its routes for every entry, behind its own authorization.",
    ),
    ("crFiles", "local files; URLs are refused."),
    (
        "setup",
        "local files; URLs are refused, and so is `helm` (ork installs no charts). A namespaced `wait` without `namespace` looks in the entry's one namespace, else `default`.",
    ),
    (
        "operatorBox.reconcile.default",
        "must be `false` next to `remote`, or `ork validate` fails; Orkestra silently runs its built-in reconciler instead.",
    ),
    (
        "operatorBox.reconcile.resync",
        "Orkestra resyncs every 30s by default and also calls on its own status writes; ork calls once per change, so a longer period is enough.",
    ),
    (
        "operatorBox.reconcile.queue.retryBackoff",
        "ork's per-CR backoff between failed reconciles; Orkestra retries failures through its rate-limited queue.",
    ),
    (
        "operatorBox.reconcile.remote.endpoint",
        "the credential goes only to the endpoint's literal host or a host in `allowedHosts`; Orkestra sends it wherever a templated endpoint leads.",
    ),
    (
        "operatorBox.reconcile.remote.auth.header",
        "only `Authorization` gets `Bearer ` before the value; Orkestra prefixes every header.",
    ),
    (
        "operatorBox.reconcile.remote.auth.secretRef.name",
        "a template is refused at load (a CR must not choose which Secret ork reads).",
    ),
    (
        "operatorBox.reconcile.remote.auth.secretRef.namespace",
        "when absent: `ORK_NAMESPACE`, else ork's pod's namespace, else `default` (Orkestra: `orkestra-system` in a pod).",
    ),
    (
        "operatorBox.reconcile.remote.managedResources",
        "an answer's object of an undeclared type refuses the whole answer; Orkestra applies objects one by one as it reads them.",
    ),
];

/// How the field at `path` (relative to the entry when `in_entry`) relates to Orkestra's.
pub fn status(path: &str, in_entry: bool) -> Orkestra {
    if in_entry && let Some((_, note)) = DIFFERS.iter().find(|(p, _)| matches(p, path)) {
        return Orkestra::Differs(note);
    }
    let known = if in_entry { ENTRY } else { FILE };
    if known.iter().any(|p| matches(p, path)) {
        Orkestra::Same
    } else {
        Orkestra::Ork
    }
}

fn matches(pattern: &str, path: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => pattern == path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_orkestras_or_ork_additions_and_differences_are_named() {
        assert_eq!(
            status("operatorBox.reconcile.workers", true),
            Orkestra::Same
        );
        assert_eq!(status("apiTypes.kind", true), Orkestra::Same);
        assert_eq!(
            status("operatorBox.reconcile.remote.prune", true),
            Orkestra::Ork
        );
        assert_eq!(status("operatorBox.reconcile.onStart", true), Orkestra::Ork);
        assert!(matches!(
            status("operatorBox.reconcile.remote.auth.header", true),
            Orkestra::Differs(_)
        ));
        assert_eq!(status("metadata.name", false), Orkestra::Same);
        assert_eq!(status("notes.functions[].shadow", false), Orkestra::Ork);
    }

    /// Every difference names one of Orkestra's fields.
    #[test]
    fn every_difference_is_of_a_field_orkestra_has() {
        for (path, _) in DIFFERS {
            assert!(
                ENTRY.iter().any(|p| matches(p, path)),
                "{path} differs but is not listed as Orkestra's"
            );
        }
    }
}
