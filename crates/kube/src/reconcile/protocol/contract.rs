//! The [`Protocol`] trait: what the pipeline asks of a protocol.

use futures::future::BoxFuture;
use kube::core::DynamicObject;
use ork_katalog::metacontroller::UpdateMethod;
use ork_protocol::metacontroller::ObjectMap;
use ork_protocol::{Decision, Lint, Policy};
use serde_json::Value;

use crate::error::ReconcileError;
use crate::ports::{Owner, Transport};
use crate::reconcile::job::{Job, Ports};

/// One way of speaking with a service.
pub(crate) trait Protocol: Send + Sync {
    /// What the service is sent besides the CR and its children, read before the call (a
    /// customize hook's related objects); nothing by default.
    fn related<'a>(
        &'a self,
        _ports: Ports<'a>,
        _job: &'a Job,
        _cr: &'a Value,
    ) -> BoxFuture<'a, Result<ObjectMap, ReconcileError>> {
        Box::pin(async { Ok(ObjectMap::new()) })
    }

    /// The request body of `job` (`cr` is its CR as JSON) with its `related` objects; a
    /// finalize call when `finalizing`.
    ///
    /// # Errors
    /// The request cannot be built (a validation rule denies it, a template fails).
    fn request(
        &self,
        job: &Job,
        cr: &Value,
        related: ObjectMap,
        finalizing: bool,
    ) -> Result<Vec<u8>, ReconcileError>;

    /// Where the call goes: the entry's transport, or a finalize hook's own.
    fn transport<'a>(&'a self, ports: Ports<'a>, _finalizing: bool) -> &'a dyn Transport {
        ports.transport
    }

    /// The answer as a decision, checked whole against `policy`.
    ///
    /// # Errors
    /// Anything the answer breaks, named; nothing of it is applied.
    fn decide(
        &self,
        job: &Job,
        cr: &Value,
        answer: &[u8],
        policy: &Policy,
        redact: &dyn Fn(&str) -> String,
    ) -> Result<Decision, ReconcileError>;

    /// `ork check`: every way `answer` breaks the protocol.
    fn lint(&self, answer: &[u8], policy: &Policy) -> Lint;

    /// What an answer for the CR `owner` must satisfy.
    fn policy(&self, owner: &Owner) -> Policy;

    /// Why `cr` is not this protocol's to reconcile now (a decorator's selectors do not select
    /// it); `None` when it is.
    fn unselected(&self, _cr: &DynamicObject) -> Option<String> {
        None
    }

    /// How a changed child of `group`/`plural` is updated.
    fn update_method(&self, _group: &str, _plural: &str) -> UpdateMethod {
        UpdateMethod::InPlace
    }

    /// Whether the object reconciled is ork's to write status, conditions and annotations on
    /// (a DecoratorController's object is not: ork writes only what its hook asks for).
    fn owns_the_object(&self) -> bool {
        true
    }

    /// The reason and note of the event that tells a failed reconcile of a CR of `kind`
    /// (`message` is the cause, cleaned).
    fn failure_event(&self, kind: &str, message: &str) -> (String, String) {
        (
            crate::event_reasons::RECONCILE_ERROR.of(kind),
            message.to_string(),
        )
    }

    /// Whether the service is synced once more after its own child writes, to observe them
    /// (Metacontroller's hooks compute status from the children they see); a Katalog's service
    /// is not (ork tells it what it applied).
    fn observes_own_writes(&self) -> bool {
        false
    }
}
