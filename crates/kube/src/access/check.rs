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
    /// What a reader of `entry`'s health and CRs must be allowed: `list` on its CRs wherever
    /// the entry watches them, in each of its namespaces (every one) or everywhere. The same
    /// for a Katalog entry and a Metacontroller controller's.
    pub fn lists_of(entry: &CrdEntry) -> Vec<ReadCheck> {
        let list = |namespace: Option<String>| ReadCheck {
            verb: "list",
            group: entry.api_types.group.clone(),
            resource: entry.api_types.plural.clone(),
            namespace,
            name: None,
        };
        match entry.watched_namespaces().filter(|_| entry.namespaced) {
            Some(namespaces) => namespaces.into_iter().map(|ns| list(Some(ns))).collect(),
            None => vec![list(None)],
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

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(guards: &str) -> CrdEntry {
        let yaml = format!(
            r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: t}}
spec:
  crds:
    web:
      apiTypes: {{group: demo.ork.dev, version: v1, kind: WebApp, plural: webapps}}
{guards}      operatorBox:
        reconcile:
          default: false
          remote: {{endpoint: "http://127.0.0.1:1/r"}}
"#
        );
        let k = ork_katalog::load_str(&yaml, std::path::Path::new("k.yaml")).expect("valid");
        k.spec.crds["web"].clone()
    }

    /// A reader of an entry of two namespaces needs `list` in each (as ork itself is granted
    /// there), not cluster-wide; of an entry of every namespace, cluster-wide.
    #[test]
    fn a_reader_must_list_the_crs_wherever_the_entry_watches_them() {
        let at = |guards: &str| -> Vec<Option<String>> {
            ReadCheck::lists_of(&entry(guards))
                .into_iter()
                .map(|c| c.namespace)
                .collect()
        };
        assert_eq!(
            at("      allowedNamespaces: [team, ops]\n"),
            [Some("team".to_string()), Some("ops".to_string())]
        );
        assert_eq!(at("      namespace: team\n"), [Some("team".to_string())]);
        assert_eq!(at(""), [None]);
        assert_eq!(at("      allowedNamespaces: [\"team-*\"]\n"), [None]);
    }
}
