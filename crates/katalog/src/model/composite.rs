//! A Metacontroller CompositeController as ork runs it (SPEC §15): the settings its entry's
//! reconcile reads. [`crate::metacontroller`] reads them from a controller object.

use std::collections::BTreeMap;

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
}

impl Composite {
    /// The finalizer Metacontroller puts on parents (so a parent it held is released by ork).
    pub fn finalizer(&self) -> String {
        format!("metacontroller.io/compositecontroller-{}", self.name)
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
