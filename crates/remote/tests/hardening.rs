//! SPEC §11 for the HTTP transport, against raw servers on 127.0.0.1: the credential host check
//! reads URLs as the client does, redirects are refused, headers go out in Title-Case, and
//! service text in errors is short, clean and free of secrets.

mod support;

use std::time::Duration;

use ork_remote::{
    Call, CallError, Credential, Endpoint, HttpTransport, UrlError, credential_allowed,
    endpoint_host, host_of,
};
use support::{RawServer, response};

fn call<'a>(url: &'a str, credential: Option<&'a Credential>) -> Call<'a> {
    Call {
        url,
        body: br#"{"key":"ns/a"}"#.to_vec(),
        credential,
        timeout: Duration::from_secs(2),
        max_bytes: 64 * 1024,
    }
}

fn transport() -> HttpTransport {
    ork_test_support::install_crypto();
    HttpTransport::new().expect("client")
}

async fn ok_server() -> RawServer {
    RawServer::start(|_| response(200, &[], "{}")).await
}

#[tokio::test]
async fn a_backslash_in_a_cr_value_cannot_steer_the_credential_past_allowed_hosts() {
    let allowed_srv = ok_server().await;
    let other = ok_server().await;
    let (a, b) = (allowed_srv.addr.to_string(), other.addr.to_string());
    let allowed = [a.clone()];
    // Template `http://{{ .spec.h }}/r`, CR value `<other>\@<allowed>`.
    let template = "http://{{ .spec.h }}/r";
    let value = format!(r"{b}\@{a}");
    let url = format!("http://{value}/r");
    assert_eq!(endpoint_host(&url), Ok(b.clone()));
    assert_eq!(host_of(&url), Some(b.as_str()));
    let endpoint = Endpoint::parse(&url).expect("parses");
    assert!(!credential_allowed(&endpoint, template, &allowed));
    // The client indeed connects to the host the check saw.
    transport().call(call(&url, None)).await.expect("answer");
    assert_eq!(other.requests().len(), 1);
    assert_eq!(allowed_srv.connections(), 0);
}

#[tokio::test]
async fn a_templated_user_info_part_cannot_steer_the_credential_either() {
    let allowed_srv = ok_server().await;
    let other = ok_server().await;
    let (a, b) = (allowed_srv.addr.to_string(), other.addr.to_string());
    // Template `http://{{ .spec.u }}@<allowed>/r`, CR value `<other>\`.
    let template = format!("http://{{{{ .spec.u }}}}@{a}/r");
    let value = format!(r"{b}\");
    let url = format!("http://{value}@{a}/r");
    let endpoint = Endpoint::parse(&url).expect("parses");
    assert_eq!(endpoint.authority(), b);
    assert!(!credential_allowed(
        &endpoint,
        &template,
        std::slice::from_ref(&a)
    ));
    // Real user info never goes along with a credential, even to the allowed host.
    let cred = Credential::new("X-Api-Key", "k3y").expect("credential");
    let with_user = format!("http://who:pw@{a}/r");
    assert_eq!(endpoint_host(&with_user), Err(UrlError::UserInfo));
    let err = transport()
        .call(call(&with_user, Some(&cred)))
        .await
        .expect_err("user info with a credential");
    assert!(matches!(err, CallError::Url(UrlError::UserInfo)), "{err}");
    assert_eq!(allowed_srv.connections(), 0);
}

#[tokio::test]
async fn the_literal_host_and_allowed_hosts_get_the_credential() {
    let srv = ok_server().await;
    let a = srv.addr.to_string();
    let url = srv.url("/r");
    let endpoint = Endpoint::for_credential(&url).expect("parses");
    assert!(credential_allowed(
        &endpoint,
        &format!("http://{a}/{{{{ .spec.path }}}}"),
        &[]
    ));
    assert!(credential_allowed(
        &endpoint,
        "http://{{ .spec.h }}/r",
        &[a]
    ));
    assert!(credential_allowed(
        &endpoint,
        "http://{{ .spec.h }}/r",
        &["127.0.0.1".into()]
    ));
    let cred = Credential::new("Authorization", "s3cret").expect("credential");
    transport()
        .call(call(&url, Some(&cred)))
        .await
        .expect("answer");
    assert!(srv.requests()[0].contains("\r\nAuthorization: Bearer s3cret\r\n"));
}

#[tokio::test]
async fn non_http_urls_are_refused_before_any_connection() {
    for url in [
        "ftp://127.0.0.1/x",
        "127.0.0.1:80",
        "http://127.0.0.1:99999/",
    ] {
        let err = transport()
            .call(call(url, None))
            .await
            .expect_err("refused");
        assert!(matches!(err, CallError::Url(_)), "{url}: {err}");
    }
}

async fn redirect_is_refused(status: u16) {
    let target = ok_server().await;
    let location = target.url("/stolen");
    let redirector =
        RawServer::start(move |_| response(status, &[("Location", &location)], "")).await;
    let cred = Credential::new("X-Api-Key", "k3y-value").expect("credential");
    let err = transport()
        .call(call(&redirector.url("/r"), Some(&cred)))
        .await
        .expect_err("redirect");
    assert!(
        matches!(err, CallError::Redirect { status: s, .. } if s == status),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("redirects are never followed"), "{msg}");
    assert!(
        !msg.contains("stolen") && !msg.contains("k3y-value"),
        "{msg}"
    );
    assert_eq!(redirector.requests().len(), 1);
    assert_eq!(target.connections(), 0, "the other port received nothing");
}

#[tokio::test]
async fn a_307_is_a_failed_call_and_is_not_followed() {
    redirect_is_refused(307).await;
}

#[tokio::test]
async fn a_302_is_a_failed_call_and_is_not_followed() {
    redirect_is_refused(302).await;
}

#[tokio::test]
async fn requests_use_http_1_1_and_title_case_header_names() {
    let srv = ok_server().await;
    let cred = Credential::new("authorization", "s3cret").expect("credential");
    transport()
        .call(call(&srv.url("/reconcile"), Some(&cred)))
        .await
        .expect("answer");
    let raw = &srv.requests()[0];
    assert!(raw.starts_with("POST /reconcile HTTP/1.1\r\n"), "{raw}");
    for name in [
        "Content-Length: 14",
        "Content-Type: application/json",
        "Authorization: Bearer",
        "Traceparent: 00-",
        "X-Ork-Delivery: ",
        "Host: ",
    ] {
        assert!(raw.contains(&format!("\r\n{name}")), "{name} in {raw}");
    }
}

/// A service that puts the request it got, a terminal escape and a lot of padding in a 500.
async fn echo_server() -> RawServer {
    RawServer::start(|req| {
        let body = format!(
            "{req}\u{1b}[2J\u{1b}[31mboom\r\n{}",
            "x".repeat(ork_remote::SNIPPET_CHARS + 1000)
        );
        response(500, &[], &body)
    })
    .await
}

fn assert_clean(msg: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(!msg.contains(secret), "{secret} in {msg}");
    }
    assert!(!msg.chars().any(char::is_control), "{msg:?}");
    let snippet = msg
        .split_once(": unexpected status 500: ")
        .expect("status")
        .1;
    assert!(
        snippet.chars().count() <= ork_remote::SNIPPET_CHARS,
        "{} chars",
        snippet.chars().count()
    );
}

#[tokio::test]
async fn a_500_body_echoing_the_credential_is_cut_cleaned_and_redacted() {
    let srv = echo_server().await;
    let cred = Credential::new("Authorization", "s3cret-token").expect("credential");
    let err = transport()
        .call(call(&srv.url("/r"), Some(&cred)))
        .await
        .expect_err("500");
    let msg = err.to_string();
    assert_clean(&msg, &["s3cret-token"]);
    assert!(msg.contains("Authorization: Bearer [redacted]"), "{msg}");

    let cred = Credential::new("X-Api-Key", "raw-k3y").expect("credential");
    let err = transport()
        .call(call(&srv.url("/r"), Some(&cred)))
        .await
        .expect_err("500");
    let msg = err.to_string();
    assert_clean(&msg, &["raw-k3y"]);
    assert!(msg.contains("[redacted]"), "{msg}");
}

#[tokio::test]
async fn user_info_never_reaches_an_error_message() {
    let srv = echo_server().await;
    // Without a credential user info is sent, as basic auth; the echo must not show it.
    let url = format!("http://someone:pa55word@{}/r", srv.addr);
    let err = transport().call(call(&url, None)).await.expect_err("500");
    let msg = format!("{err} {err:?}");
    assert!(
        srv.requests()[0].contains("Authorization: Basic c29tZW9uZTpwYTU1d29yZA=="),
        "basic auth went out"
    );
    assert_clean(
        &err.to_string(),
        &["pa55word", "c29tZW9uZTpwYTU1d29yZA==", "someone"],
    );
    assert!(!msg.contains("pa55word"), "{msg}");

    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let url = format!("http://someone:pa55word@{closed}/r");
    let err = transport()
        .call(call(&url, None))
        .await
        .expect_err("refused");
    assert!(matches!(err, CallError::Connect { .. }), "{err}");
    let msg = format!("{err} {err:?}");
    assert!(
        !msg.contains("pa55word") && !msg.contains("someone"),
        "{msg}"
    );
}

#[test]
fn debug_output_of_a_call_shows_neither_user_info_nor_the_credential() {
    let cred = Credential::new("X-Api-Key", "k3y-value").expect("credential");
    let c = call("http://someone:pa55word@127.0.0.1:1/r?x=1", Some(&cred));
    let text = format!("{c:?}");
    assert!(text.contains("http://127.0.0.1:1/r"), "{text}");
    assert!(
        !text.contains("pa55word") && !text.contains("someone") && !text.contains("k3y-value"),
        "{text}"
    );
}

/// A client certificate the TLS stack cannot take (X.509 v1, no extensions, as `openssl x509
/// -req` writes without `-extfile`) is refused with its cause, not a bare "builder error".
#[test]
fn a_v1_client_certificate_is_refused_with_the_cause() {
    let dir = std::env::temp_dir().join(format!("ork-v1-cert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl")
            .current_dir(&dir)
            .args(args)
            .output()
            .expect("openssl runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-subj",
        "/CN=test-ca",
        "-days",
        "1",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "client.key",
        "-out",
        "client.csr",
        "-subj",
        "/CN=ork",
    ]);
    openssl(&[
        "x509",
        "-req",
        "-in",
        "client.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "client.crt",
        "-days",
        "1",
    ]);
    let read = |f: &str| std::fs::read(dir.join(f)).expect("pem");
    let tls = ork_remote::TlsSettings {
        client_cert_pem: Some((read("client.crt"), read("client.key"))),
        ..Default::default()
    };
    let _ = std::fs::remove_dir_all(&dir);
    ork_test_support::install_crypto();
    match HttpTransport::with_tls(&tls) {
        Ok(_) => {} // a TLS stack that takes v1 certificates: nothing to explain
        Err(e) => {
            let text = e.to_string();
            assert!(
                text.contains("UnsupportedCertVersion") && text.contains("v3 extensions"),
                "{text}"
            );
            assert!(!text.contains("PRIVATE KEY"), "{text}");
        }
    }
}
