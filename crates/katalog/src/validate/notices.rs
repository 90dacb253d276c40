//! What `ork validate` reports without failing: a credential or a choice of host a reader
//! should know about, and managed types that widen what ork may do.

use super::findings::{Finding, Findings};
use crate::model::{Katalog, ManagedResource, Remote};

/// What `ork validate` reports without failing.
pub(crate) fn notices(katalog: &Katalog) -> Vec<Finding> {
    let mut f = Findings::default();
    for (name, entry) in &katalog.spec.crds {
        let Some(remote) = &entry.operator_box.reconcile.remote else {
            continue;
        };
        let rp = format!("spec.crds.{name}.operatorBox.reconcile.remote");
        endpoint_notices(&mut f, &rp, remote);
        if remote.managed_resources.is_empty() && remote.command.is_none() {
            f.add(
                format!("{rp}.managedResources"),
                "no managedResources: the service may not return any child",
                None,
            );
        }
        for (i, m) in remote.managed_resources.iter().enumerate() {
            managed_resource_notices(&mut f, &format!("{rp}.managedResources[{i}]"), m);
        }
    }
    f.found
}

/// A host the CR chooses, and a credential sent in the clear.
fn endpoint_notices(f: &mut Findings, rp: &str, remote: &Remote) {
    let Some(endpoint) = &remote.endpoint else {
        return;
    };
    if remote.allowed_hosts.is_empty() && host_is_templated(endpoint.source()) {
        f.add(
            format!("{rp}.endpoint"),
            "the endpoint's host is a template and allowedHosts is empty: only a URL whose host is the one the Katalog renders without a CR is called",
            Some("list the hosts a CR may choose in `allowedHosts`"),
        );
    }
    if remote.auth.is_some()
        && let Some(host) = plain_http_host(endpoint.source())
        && !is_loopback_host(host)
    {
        f.add(
            format!("{rp}.endpoint"),
            format!(
                "the credential goes over plain http:// to {host}: anyone on the way can read it"
            ),
            Some("use https:// (with `tls.caBundle` for a private CA)"),
        );
    }
}

/// A plural left to discovery, a role ork grants from, a binding with no roles to bind.
fn managed_resource_notices(f: &mut Findings, mp: &str, m: &ManagedResource) {
    if m.needs_discovery() {
        f.add(
            mp,
            format!(
                "the plural of {} is found through discovery when ork starts",
                m.describe()
            ),
            Some("add `plural:` to fix it in the Katalog"),
        );
    }
    if m.is_role() {
        f.add(
            mp,
            format!(
                "managing {} lets the service grant anyone what ork itself holds (ork has no `escalate`: nothing beyond that)",
                m.describe()
            ),
            Some("keep ork's own RBAC narrow; review what the service may write"),
        );
    }
    if m.is_binding() && m.bind_roles.is_empty() {
        f.add(
            mp,
            format!(
                "{} without bindRoles: every binding the service returns is refused",
                m.describe()
            ),
            Some("list the roles its bindings may name: `bindRoles: [{kind: ClusterRole, name: view}]` (ork gets `bind` on exactly those)"),
        );
    }
}

/// The host of a literal `http://` URL (no template in scheme or authority).
fn plain_http_host(source: &str) -> Option<&str> {
    if host_is_templated(source) {
        return None;
    }
    let rest = source.strip_prefix("http://")?;
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    Some(match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => authority.split(':').next().unwrap_or(authority),
    })
}

fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Whether the scheme or authority of a URL template holds an action.
fn host_is_templated(source: &str) -> bool {
    let authority_end = source
        .find("://")
        .map(|i| i + 3)
        .and_then(|start| source[start..].find('/').map(|j| start + j))
        .unwrap_or(source.len());
    source[..authority_end].contains("{{")
}
