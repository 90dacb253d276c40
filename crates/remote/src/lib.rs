//! The remote edge: one request per reconcile to the service, and its answer back as bytes for
//! `ork-protocol` to check. Two transports: HTTP ([`HttpTransport`]: POST with timeout, size
//! limit, auth header, trace headers) and exec ([`exec()`]: a local program, request on stdin,
//! answer on stdout).
//!
//! The data flow of an HTTP call: the caller parses the rendered endpoint into an [`Endpoint`]
//! (the parser the HTTP client uses), decides with [`credential_allowed`] whether the
//! [`Credential`] may go there, and the transport sends to that same parsed URL. Redirects are
//! never followed.
//!
//! Credentials are handed in as [`Credential`], whose `Debug` never shows the value. No error
//! message here contains a header value or a URL's user info, and text from the service (a
//! non-200 body, stderr) is cut short, stripped of control characters (the rule of
//! `ork_protocol::text`) and of the credential ([`Credential::redact`]) before it goes into one.

mod credential;
mod endpoint;
mod error;
mod exec;
mod http;
mod text;

pub use credential::Credential;
pub use endpoint::{Endpoint, UrlError, credential_allowed, endpoint_host, host_of};
pub use error::{CallError, SNIPPET_CHARS};
pub use exec::{ExecCall, exec};
pub use http::{Call, HttpTransport, TlsSettings};
pub use text::REDACTED;
