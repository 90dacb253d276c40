//! Typed Katalog structs (SPEC §1, §9), deserialised with unknown fields denied.
//!
//! After [`crate::load_file`] the model is complete: `apiTypes` is filled from `crdFile` when
//! needed, file paths are resolved against the Katalog's folder, managed resources carry what
//! could be derived, and every template and condition knows the Katalog's notes.
//!
//! One module per section of the file, from the root down: `katalog` (the file, metadata,
//! notes), `entry` (`spec.crds.<name>`), `depends_on`, `operator_box`, `gates`, `reconcile`,
//! `remote`, `managed`, `payload` and `auth`; `composite` holds what a Metacontroller
//! controller's entry carries besides. They hold the types and their defaults only;
//! rendering a CR's templates at run time is `crate::render`'s.

mod admission;
mod auth;
pub(crate) mod composite;
mod defaults;
mod depends_on;
mod entry;
mod gates;
mod inputs;
mod katalog;
mod managed;
mod operator_box;
mod payload;
mod reconcile;
mod remote;
mod rollout;
mod setup;

pub use admission::{Admission, FailurePolicy, MAX_ADMISSION_TIMEOUT, Operation};
pub use auth::{Auth, CaSecretRef, SecretRef, Tls, TlsSecretRef};
pub use depends_on::{Dependency, DependencyCondition, DependsOn};
pub use entry::{ApiTypes, CrdEntry, Endpoints, namespace_matches};
pub use gates::{FailPolicy, Gate, PreReconcile, ValidationRules};
pub use inputs::{Input, LabelOperator, MatchExpression};
pub use katalog::{Katalog, KatalogMeta, KatalogSpec, NoteFunction, NotesBlock};
pub use managed::{BindRole, ManagedResource, ManagedResourceSpec, RBAC_GROUP};
pub use operator_box::{CrossRef, CrossSelector, Observe, OperatorBox, RuntimeBox};
pub use payload::{ChildResourcePayload, ChildrenPayload, ObjectPayload, Payload};
pub use reconcile::{OnStart, Queue, Reconcile, RetryBackoff};
pub use remote::{RateLimit, Remote};
pub use rollout::{Halt, Rollout};
pub use setup::{Setup, SetupWait};

pub use crate::sentinel::Sentinel;
