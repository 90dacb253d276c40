//! Who may read ork's inspection endpoints (`/katalog`, SPEC §11 and §14): a caller with a
//! bearer token the API server authenticates (TokenReview) and allows to `list` the CRs
//! concerned (SubjectAccessReview), the same decision `kubectl get` would get. What those
//! endpoints show (health, service text) is about the CRs, so whoever may read the CRs may read
//! it; nobody else, from the network or not.

use std::collections::BTreeMap;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::Client;
use kube::api::{Api, PostParams};

/// The CRs a read concerns: `verb` (`list`, or `get` of the one `name`) on `resource` of
/// `group`, in `namespace` or everywhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadCheck {
    pub verb: &'static str,
    pub group: String,
    pub resource: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl ReadCheck {
    /// The same CRs, `get` of the one named `name` in `namespace`.
    pub fn get(&self, namespace: Option<String>, name: &str) -> ReadCheck {
        ReadCheck {
            verb: "get",
            namespace,
            name: Some(name.to_string()),
            ..self.clone()
        }
    }
}

/// The API server's decision on one caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    Allowed,
    /// No token, or one the API server does not accept.
    Unauthenticated,
    /// Authenticated as `user`, who may not do `what` (`list group/resource in ns`).
    Forbidden {
        user: String,
        what: String,
    },
}

/// Asks the API server whether the holder of `token` may read what `checks` name.
///
/// # Errors
/// The reviews themselves failed (the API server is unreachable, or ork may not create them).
pub async fn review(
    client: &Client,
    token: &str,
    checks: &[ReadCheck],
) -> Result<Access, kube::Error> {
    let review = TokenReview {
        spec: TokenReviewSpec {
            token: Some(token.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<TokenReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    let status = answer.status.unwrap_or_default();
    let Some(user) = status.user.filter(|_| status.authenticated == Some(true)) else {
        return Ok(Access::Unauthenticated);
    };
    let reviews = Api::<SubjectAccessReview>::all(client.clone());
    let extra: Option<BTreeMap<String, Vec<String>>> = user.extra.clone();
    for check in checks {
        let sar = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                groups: user.groups.clone(),
                uid: user.uid.clone(),
                extra: extra.clone(),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(check.verb.into()),
                    group: Some(check.group.clone()),
                    resource: Some(check.resource.clone()),
                    namespace: check.namespace.clone(),
                    name: check.name.clone(),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let decided = reviews.create(&PostParams::default(), &sar).await?;
        if !decided.status.is_some_and(|s| s.allowed) {
            let group = if check.group.is_empty() {
                "core"
            } else {
                &check.group
            };
            let what = match &check.name {
                Some(name) => format!("{group}/{} {name}", check.resource),
                None => format!("{group}/{}", check.resource),
            };
            return Ok(Access::Forbidden {
                user: user.username.unwrap_or_default(),
                what: match &check.namespace {
                    Some(ns) => format!("{} {what} in {ns}", check.verb),
                    None => format!("{} {what}", check.verb),
                },
            });
        }
    }
    Ok(Access::Allowed)
}
