//! The one error of the template language: why a template failed to parse or render.

/// Why a template failed to parse or render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(pub String);

/// A [`TemplateError`] with `msg`.
pub(super) fn err(msg: impl Into<String>) -> TemplateError {
    TemplateError(msg.into())
}
