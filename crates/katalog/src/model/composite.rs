//! A Metacontroller controller as ork runs it (SPEC §15): a CompositeController, or one
//! resource rule of a DecoratorController; the settings its entry's reconcile reads.
//! [`crate::metacontroller`] reads them from a controller object.

use std::collections::BTreeMap;

use super::managed::BindRole;

use ork_protocol::metacontroller::HookVersion;
use serde_json::Value;

/// How existing children of one type are brought to what the hook wants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UpdateMethod {
    /// Metacontroller's default: an existing child is never changed (it is created again only
    /// after someone deletes it).
    #[default]
    OnDelete,
    /// A child that differs is deleted, and created anew on the next sync.
    Recreate,
    /// A child that differs is updated in place (server-side apply).
    InPlace,
}

/// A Kubernetes label selector (`matchLabels` and `matchExpressions`), also used for
/// annotations (a DecoratorController's `annotationSelector`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selector {
    pub equals: BTreeMap<String, String>,
    /// `(key, operator, values)`: `In`, `NotIn`, `Exists`, `DoesNotExist`.
    pub expressions: Vec<(String, String, Vec<String>)>,
}

impl Selector {
    /// A selector as written (`matchLabels`, or `matchAnnotations` when `equals_key` says so,
    /// and `matchExpressions`); `None` or `null` selects everything.
    ///
    /// # Errors
    /// A value that is not a string, or an unknown operator.
    pub fn from_value(v: Option<&Value>, equals_key: &str) -> Result<Selector, String> {
        let Some(Value::Object(m)) = v else {
            return Ok(Selector::default());
        };
        let mut out = Selector::default();
        if let Some(Value::Object(eq)) = m.get(equals_key) {
            for (k, v) in eq {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("{equals_key}.{k}: values are strings"))?;
                out.equals.insert(k.clone(), v.to_string());
            }
        }
        for (i, e) in m
            .get("matchExpressions")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
            let op = text("operator");
            if !matches!(op, "In" | "NotIn" | "Exists" | "DoesNotExist") {
                return Err(format!(
                    "matchExpressions[{i}].operator {op:?} is not In, NotIn, Exists or DoesNotExist"
                ));
            }
            let values = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            out.expressions
                .push((text("key").to_string(), op.to_string(), values));
        }
        Ok(out)
    }

    pub fn is_empty(&self) -> bool {
        self.equals.is_empty() && self.expressions.is_empty()
    }

    /// Whether the map `get` reads (labels or annotations) is selected.
    pub fn matches<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.equals.iter().all(|(k, v)| get(k) == Some(v.as_str()))
            && self.expressions.iter().all(|(k, op, values)| {
                let has = |v: &str| values.iter().any(|x| x == v);
                match (op.as_str(), get(k)) {
                    ("In", Some(v)) => has(v),
                    ("NotIn", Some(v)) => !has(v),
                    ("NotIn" | "DoesNotExist", None) | ("Exists", Some(_)) => true,
                    _ => false,
                }
            })
    }
}

/// What a DecoratorController's entry adds: which objects of its resource type it decorates.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decoration {
    pub labels: Selector,
    pub annotations: Selector,
}

/// A hook endpoint: where and how long to wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hook {
    pub url: String,
    pub timeout: std::time::Duration,
}

/// A child type of the controller, as the reconcile needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildRule {
    /// `group/version` (`v1` for the core group).
    pub api_version: String,
    pub resource: String,
    pub method: UpdateMethod,
}

impl ChildRule {
    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        self.api_version
            .split_once('/')
            .map_or("", |(group, _)| group)
    }
}

/// On a controller object: more types its customize hook may read (`apiVersion/resource`,
/// comma-separated: `v1/secrets, apps/v1/deployments`) beside its parent's, its children's and
/// Namespaces.
pub const RELATED_RESOURCES: &str = "orkestra.orkspace.io/related-resources";
/// On a controller object: `"true"` sends the related Secrets' values to its hooks; without it
/// they arrive without `data`, unless Secrets are among the controller's child types.
pub const RELATED_SECRET_VALUES: &str = "orkestra.orkspace.io/related-secret-values";

pub use ork_protocol::metacontroller::{BIND_ROLES, CHILDREN_IN_ORK_NAMESPACE};

/// What a controller object opts into beyond Metacontroller's schema, by annotation (the
/// Katalog-only rules of SPEC §11 made expressible for controllers, never granted silently).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControllerGrants {
    /// [`BIND_ROLES`]: the roles its binding children may name.
    pub bind_roles: Vec<BindRole>,
    /// [`CHILDREN_IN_ORK_NAMESPACE`].
    pub ork_namespace: bool,
}

/// What a controller's customize hook may have ork read for it (SPEC §11, §20): related reads
/// run under ork's identity, so they are held to what the controller object declares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelatedAccess {
    /// [`RELATED_RESOURCES`]: `(apiVersion, resource)`.
    pub extra: Vec<(String, String)>,
    /// [`RELATED_SECRET_VALUES`].
    pub secret_values: bool,
}

/// Why a related read is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelatedRefused(pub String);

impl Composite {
    /// Whether the customize hook may ask for objects of `api_version`/`resource`: the parent's
    /// type, a child type, Namespaces (metadata only, what Metacontroller's examples select
    /// targets by), or a type the controller names in [`RELATED_RESOURCES`].
    ///
    /// # Errors
    /// Any other type, with the annotation that would allow it.
    pub fn may_relate(&self, api_version: &str, resource: &str) -> Result<(), RelatedRefused> {
        let same = |v: &str, r: &str| v == api_version && r == resource;
        let declared = same(&self.parent_api_version, &self.parent_resource)
            || self
                .children
                .iter()
                .any(|c| same(&c.api_version, &c.resource))
            || same("v1", "namespaces")
            || self.related.extra.iter().any(|(v, r)| same(v, r));
        if declared {
            return Ok(());
        }
        Err(RelatedRefused(format!(
            "customize hook: related {api_version}/{resource} is neither the parent's type, a child type nor Namespaces; ork reads related objects with its own identity, so other types must be declared on the controller: annotation {RELATED_RESOURCES}: \"{api_version}/{resource}\""
        )))
    }

    /// Whether related Secrets reach the hooks with their values: when the controller opts in
    /// ([`RELATED_SECRET_VALUES`]) or manages Secrets itself (Metacontroller sends child
    /// Secrets whole).
    pub fn related_secret_values(&self) -> bool {
        self.related.secret_values
            || self
                .children
                .iter()
                .any(|c| c.api_version == "v1" && c.resource == "secrets")
    }
}

/// A CompositeController compiled for ork: what its reconcile does differently from a Katalog
/// entry's.
#[derive(Clone, Debug)]
pub struct Composite {
    /// The controller's name (`metadata.name`).
    pub name: String,
    /// The controller object as hooks receive it in `controller`.
    pub controller: Value,
    pub version: HookVersion,
    pub sync: Hook,
    pub finalize: Option<Hook>,
    pub customize: Option<Hook>,
    /// The parent's `apiVersion` and plural.
    pub parent_api_version: String,
    pub parent_resource: String,
    /// `parentResource.labelSelector.matchLabels`: only matching parents are synced.
    pub parent_labels: BTreeMap<String, String>,
    /// `parentResource.ignoreStatusChanges`. ork never syncs a parent for a change of its
    /// status alone (its fingerprint leaves status out), so both settings behave as `true`.
    pub ignore_status_changes: bool,
    pub children: Vec<ChildRule>,
    /// `generateSelector`: children are selected by `controller-uid: <parent UID>` (added to
    /// every desired child), not by the parent's `spec.selector`.
    pub generate_selector: bool,
    pub resync_period: Option<std::time::Duration>,
    /// Set for a DecoratorController's resource rule: the objects it decorates (its "parents")
    /// are not its own; `children` are its `attachments`.
    pub decorator: Option<Decoration>,
    /// The entry's name: the controller's, with the resource added when a DecoratorController
    /// decorates more than one type.
    pub entry_name: String,
    /// What the customize hook may have ork read ([`Composite::may_relate`]).
    pub related: RelatedAccess,
    /// What the controller object opts into by annotation ([`ControllerGrants`]).
    pub grants: ControllerGrants,
}

impl Composite {
    /// The finalizer Metacontroller puts on parents (so a parent it held is released by ork).
    pub fn finalizer(&self) -> String {
        let kind = if self.decorator.is_some() {
            "decoratorcontroller"
        } else {
            "compositecontroller"
        };
        format!("metacontroller.io/{kind}-{}", self.name)
    }

    /// The parent's API group.
    pub fn parent_group(&self) -> &str {
        self.parent_api_version
            .split_once('/')
            .map_or("", |(group, _)| group)
    }

    /// The parent's API version (without the group).
    pub fn parent_version(&self) -> &str {
        self.parent_api_version
            .split_once('/')
            .map_or(self.parent_api_version.as_str(), |(_, v)| v)
    }

    /// The update method for children of `group`/`plural`.
    pub fn method(&self, group: &str, plural: &str) -> UpdateMethod {
        self.children
            .iter()
            .find(|c| c.group() == group && c.resource == plural)
            .map_or(UpdateMethod::default(), |c| c.method)
    }
}
