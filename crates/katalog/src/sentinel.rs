//! The sentinels: what changed between the previous and the current object, as gates and
//! templates read it. A vocabulary of its own, below the templates, conditions and model that
//! name it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Change detectors computed between the previous and the current object: Orkestra's 14
/// (every `metav1.Object` field) and ork's `specChanged`.
#[derive(
    Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub enum Sentinel {
    GenerationChanged,
    LabelsChanged,
    AnnotationsChanged,
    DeletionStarted,
    FinalizersChanged,
    NameChanged,
    NamespaceChanged,
    GenerateNameChanged,
    #[serde(rename = "uidChanged")]
    UidChanged,
    ResourceVersionChanged,
    CreationTimestampChanged,
    DeletionGracePeriodSecondsChanged,
    OwnerReferenceChanged,
    ManagedFieldsChanged,
    SpecChanged,
}

impl Sentinel {
    pub const ALL: [Sentinel; 15] = [
        Sentinel::GenerationChanged,
        Sentinel::LabelsChanged,
        Sentinel::AnnotationsChanged,
        Sentinel::DeletionStarted,
        Sentinel::FinalizersChanged,
        Sentinel::NameChanged,
        Sentinel::NamespaceChanged,
        Sentinel::GenerateNameChanged,
        Sentinel::UidChanged,
        Sentinel::ResourceVersionChanged,
        Sentinel::CreationTimestampChanged,
        Sentinel::DeletionGracePeriodSecondsChanged,
        Sentinel::OwnerReferenceChanged,
        Sentinel::ManagedFieldsChanged,
        Sentinel::SpecChanged,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Sentinel::GenerationChanged => "generationChanged",
            Sentinel::LabelsChanged => "labelsChanged",
            Sentinel::AnnotationsChanged => "annotationsChanged",
            Sentinel::DeletionStarted => "deletionStarted",
            Sentinel::FinalizersChanged => "finalizersChanged",
            Sentinel::NameChanged => "nameChanged",
            Sentinel::NamespaceChanged => "namespaceChanged",
            Sentinel::GenerateNameChanged => "generateNameChanged",
            Sentinel::UidChanged => "uidChanged",
            Sentinel::ResourceVersionChanged => "resourceVersionChanged",
            Sentinel::CreationTimestampChanged => "creationTimestampChanged",
            Sentinel::DeletionGracePeriodSecondsChanged => "deletionGracePeriodSecondsChanged",
            Sentinel::OwnerReferenceChanged => "ownerReferenceChanged",
            Sentinel::ManagedFieldsChanged => "managedFieldsChanged",
            Sentinel::SpecChanged => "specChanged",
        }
    }

    pub fn from_name(name: &str) -> Option<Sentinel> {
        Sentinel::ALL.into_iter().find(|s| s.name() == name)
    }
}
