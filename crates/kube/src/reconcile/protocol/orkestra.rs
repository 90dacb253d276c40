//! Orkestra's remote protocol (SPEC §2): the request of SPEC §2.1, the answer of §2.2.

use ork_protocol::metacontroller::ObjectMap;
use ork_protocol::{Decision, Lint, Policy};
use serde_json::Value;

use super::contract::Protocol;
use crate::entry::EntryContext;
use crate::error::ReconcileError;
use crate::ports::Owner;
use crate::reconcile::job::Job;
use crate::reconcile::request;

pub(super) struct Orkestra<'a> {
    pub ctx: &'a EntryContext,
}

impl Protocol for Orkestra<'_> {
    fn request(
        &self,
        job: &Job,
        cr: &Value,
        _related: ObjectMap,
        finalizing: bool,
    ) -> Result<Vec<u8>, ReconcileError> {
        request::build(self.ctx, job, cr, finalizing)
    }

    fn decide(
        &self,
        _job: &Job,
        _cr: &Value,
        answer: &[u8],
        policy: &Policy,
        redact: &dyn Fn(&str) -> String,
    ) -> Result<Decision, ReconcileError> {
        ork_protocol::decide(answer, policy)
            .map_err(|e| ReconcileError::InvalidResponse(redact(&e.to_string())))
    }

    fn lint(&self, answer: &[u8], policy: &Policy) -> Lint {
        ork_protocol::lint(answer, policy)
    }

    fn policy(&self, owner: &Owner) -> Policy {
        self.ctx.policy(owner)
    }
}
