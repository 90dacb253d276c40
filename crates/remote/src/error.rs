//! Why a call did not produce an answer.

use std::time::Duration;

use crate::endpoint::UrlError;

/// How many characters of service text (a body, stderr) an error message keeps: enough for the
/// cause a service gives, whole (the CR's condition keeps up to 4,000 characters, its events
/// 1,000; the flight recorder all of it).
pub const SNIPPET_CHARS: usize = 2048;

/// Why a call did not produce an answer. Messages carry no header value and no user info;
/// service text in them is cleaned and redacted.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("endpoint URL refused: {0}")]
    Url(#[from] UrlError),
    #[error("POST {url}: timed out after {after:?}")]
    Timeout { url: String, after: Duration },
    #[error("POST {url}: cannot connect: {reason}")]
    Connect { url: String, reason: String },
    #[error("POST {url}: unexpected status {status}{body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("POST {url}: the service is busy (429) and asks to be called again in {after:?}")]
    Busy { url: String, after: Duration },
    #[error("POST {url}: the service answered {status}, a redirect; redirects are never followed")]
    Redirect { url: String, status: u16 },
    #[error("POST {url}: response larger than the limit of {limit} bytes")]
    TooLarge { url: String, limit: u64 },
    /// The service accepted the request and closed the connection (or reset it) before any
    /// answer: most often it crashed on this request.
    #[error(
        "POST {url}: the service closed the connection without answering ({reason}): did it crash on this request? See its log"
    )]
    Closed { url: String, reason: String },
    #[error("POST {url}: {reason}")]
    Transport { url: String, reason: String },
    #[error("{0}")]
    Config(String),
    #[error("command {program}: cannot start: {reason}")]
    ExecSpawn { program: String, reason: String },
    #[error("command {program}: timed out after {after:?} and was killed{stderr}")]
    ExecTimeout {
        program: String,
        after: Duration,
        stderr: String,
    },
    #[error("command {program}: {status}{stderr}")]
    ExecFailed {
        program: String,
        status: String,
        stderr: String,
    },
    #[error(
        "command {program}: response larger than the limit of {limit} bytes; the command was killed{stderr}"
    )]
    ExecTooLarge {
        program: String,
        limit: u64,
        stderr: String,
    },
    #[error("command {program}: stdout is not a JSON answer: {reason}{stderr}")]
    ExecGarbage {
        program: String,
        reason: String,
        stderr: String,
    },
}
