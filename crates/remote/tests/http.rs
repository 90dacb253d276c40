//! The HTTP transport against a real service on 127.0.0.1.

use std::time::Duration;

use ork_remote::{Call, CallError, Credential, HttpTransport};
use ork_test_support::fake_service::{FakeService, Reply};

#[allow(dead_code)] // this file uses the raw server's answers only
mod support;

fn call<'a>(url: &'a str, credential: Option<&'a Credential>, max_bytes: u64) -> Call<'a> {
    Call {
        url,
        body: br#"{"key":"ns/a"}"#.to_vec(),
        credential,
        timeout: Duration::from_millis(500),
        max_bytes,
    }
}

fn transport() -> HttpTransport {
    ork_test_support::install_crypto();
    HttpTransport::new().expect("client")
}

#[tokio::test]
async fn posts_json_with_credential_and_trace_headers() {
    let svc = FakeService::start(|_| Reply::ok(r#"{"result":"ok"}"#))
        .await
        .expect("service");
    let cred = Credential::new("Authorization", "s3cret").expect("credential");
    let body = transport()
        .call(call(&svc.url, Some(&cred), 1024))
        .await
        .expect("answer");
    assert_eq!(body, br#"{"result":"ok"}"#);
    let req = &svc.received()[0];
    assert!(req.head.starts_with("POST /reconcile "));
    assert_eq!(req.header("authorization"), Some("Bearer s3cret"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    // W3C trace context: version, a 16-byte trace id and an 8-byte parent id in lowercase hex,
    // flags; the delivery id is 16 bytes of hex too.
    let lower_hex = |s: &str, len: usize| {
        s.len() == len
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    let trace: Vec<&str> = req
        .header("traceparent")
        .unwrap_or_default()
        .split('-')
        .collect();
    assert!(
        trace.len() == 4
            && trace[0] == "00"
            && lower_hex(trace[1], 32)
            && lower_hex(trace[2], 16)
            && trace[3] == "01",
        "{trace:?}"
    );
    let delivery = req.header("x-ork-delivery").unwrap_or_default();
    assert!(lower_hex(delivery, 32), "{delivery}");
    assert_eq!(req.body["key"], "ns/a");
}

#[tokio::test]
async fn connections_are_reused() {
    let svc = FakeService::start(|_| Reply::ok("{}"))
        .await
        .expect("service");
    let t = transport();
    for _ in 0..3 {
        t.call(call(&svc.url, None, 1024)).await.expect("answer");
    }
    assert_eq!(svc.calls(), 3);
    assert_eq!(
        svc.connections(),
        1,
        "keep-alive: one connection for three calls"
    );
}

#[tokio::test]
async fn status_timeout_and_size_failures_say_which() {
    let svc = FakeService::start(|_| Reply::Respond(503, "busy".into()))
        .await
        .expect("service");
    let err = transport()
        .call(call(&svc.url, None, 1024))
        .await
        .expect_err("503");
    assert_eq!(
        err.to_string(),
        format!("POST {}: unexpected status 503: busy", svc.url)
    );

    svc.set_script(|_| Reply::ok("x".repeat(5000)));
    let err = transport()
        .call(call(&svc.url, None, 1024))
        .await
        .expect_err("too large");
    assert!(
        matches!(err, CallError::TooLarge { limit: 1024, .. }),
        "{err}"
    );

    svc.set_script(|_| Reply::Hang);
    let err = transport()
        .call(call(&svc.url, None, 1024))
        .await
        .expect_err("timeout");
    assert!(matches!(err, CallError::Timeout { .. }), "{err}");
}

#[tokio::test]
async fn errors_never_contain_the_credential() {
    let cred = Credential::new("X-Api-Key", "s3cret-value").expect("credential");
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let url = format!("http://user:pw@{closed}/reconcile");
    let err = transport()
        .call(call(&url, Some(&cred), 1024))
        .await
        .expect_err("refused");
    let text = format!("{err} {err:?}");
    assert!(
        !text.contains("s3cret-value") && !text.contains("pw@"),
        "{text}"
    );
}

mod tls {
    use super::*;
    use ork_remote::TlsSettings;
    use ork_test_support::pki::TestPki;

    fn with(tls: &TlsSettings) -> HttpTransport {
        ork_test_support::install_crypto();
        HttpTransport::with_tls(tls).expect("client")
    }

    #[tokio::test]
    async fn a_private_ca_and_a_client_certificate_make_mtls_work() {
        let pki = TestPki::generate().expect("pki");
        let svc = FakeService::start_tls(|_| Reply::ok("{}"), &pki, true)
            .await
            .expect("service");
        let tls = TlsSettings {
            ca_pem: Some(pki.ca_pem.clone().into_bytes()),
            client_cert_pem: Some((
                pki.client_cert_pem.clone().into_bytes(),
                pki.client_key_pem.clone().into_bytes(),
            )),
        };
        let body = with(&tls)
            .call(call(&svc.url, None, 1024))
            .await
            .expect("answer over mTLS");
        assert_eq!(body, b"{}");
    }

    #[tokio::test]
    async fn verification_is_on_without_the_ca_and_mtls_needs_the_client_certificate() {
        let pki = TestPki::generate().expect("pki");
        let svc = FakeService::start_tls(|_| Reply::ok("{}"), &pki, true)
            .await
            .expect("service");
        let unknown_ca = with(&TlsSettings::default())
            .call(call(&svc.url, None, 1024))
            .await;
        assert!(
            unknown_ca.is_err(),
            "a certificate of an unknown CA is refused"
        );
        let no_client_cert = TlsSettings {
            ca_pem: Some(pki.ca_pem.clone().into_bytes()),
            client_cert_pem: None,
        };
        assert!(
            with(&no_client_cert)
                .call(call(&svc.url, None, 1024))
                .await
                .is_err()
        );
        assert_eq!(svc.calls(), 0, "no request got through");
    }

    #[test]
    fn a_bad_key_is_reported_without_showing_it() {
        let tls = TlsSettings {
            ca_pem: None,
            client_cert_pem: Some((b"not a cert".to_vec(), b"secret-key-material".to_vec())),
        };
        ork_test_support::install_crypto();
        let err = HttpTransport::with_tls(&tls).expect_err("bad PEM");
        assert!(!err.to_string().contains("secret-key-material"));
        assert!(!format!("{tls:?}").contains("secret-key-material"));
    }
}

mod busy {
    use super::*;

    #[tokio::test]
    async fn a_429_with_retry_after_asks_to_be_called_again_then() {
        let svc = support::RawServer::start(|_| {
            support::response(429, &[("Retry-After", "7")], "slow down")
        })
        .await;
        let url = svc.url("/sync");
        let err = transport()
            .call(call(&url, None, 1024))
            .await
            .expect_err("429");
        assert!(
            matches!(err, CallError::Busy { after, .. } if after == Duration::from_secs(7)),
            "{err}"
        );
        // Without a usable Retry-After it is an error status like any other.
        let plain = support::RawServer::start(|_| support::response(429, &[], "no")).await;
        let url = plain.url("/sync");
        let err = transport()
            .call(call(&url, None, 1024))
            .await
            .expect_err("429");
        assert!(
            matches!(err, CallError::Status { status: 429, .. }),
            "{err}"
        );
    }
}
