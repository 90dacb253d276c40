//! What a read of the inspector concerns, as the API server is asked about it.

use ork_katalog::CrdEntry;

/// The CRs a read concerns: `verb` (`list`, or `get` of the one `name`) on `resource` of
/// `group`, in `namespace` or everywhere.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReadCheck {
    pub verb: &'static str,
    pub group: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl ReadCheck {
    /// What a reader of `entry`'s health and CRs must be allowed: `list` on its CRs, where the
    /// entry watches them. The same for a Katalog entry and a Metacontroller controller's.
    pub fn list_of(entry: &CrdEntry) -> ReadCheck {
        ReadCheck {
            verb: "list",
            group: entry.api_types.group.clone(),
            resource: entry.api_types.plural.clone(),
            namespace: entry.single_namespace().filter(|_| entry.namespaced),
            name: None,
        }
    }

    /// The same CRs, `get` of the one named `name` in `namespace`.
    pub fn get(&self, namespace: Option<String>, name: &str) -> ReadCheck {
        ReadCheck {
            verb: "get",
            namespace,
            name: Some(name.to_string()),
            ..self.clone()
        }
    }

    /// `list demo.ork.dev/webapps in ns`, as a refusal names it.
    pub(super) fn describe(&self) -> String {
        let group = if self.group.is_empty() {
            "core"
        } else {
            &self.group
        };
        let what = match &self.name {
            Some(name) => format!("{group}/{} {name}", self.resource),
            None => format!("{group}/{}", self.resource),
        };
        match &self.namespace {
            Some(ns) => format!("{} {what} in {ns}", self.verb),
            None => format!("{} {what}", self.verb),
        }
    }
}
