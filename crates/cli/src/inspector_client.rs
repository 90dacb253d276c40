//! How the CLI asks a running ork's inspector (`ork explain`, `ork rollout`): its address from
//! `--server` or `$ORK_SERVER`, the caller's bearer token (`--token`, `$ORK_TOKEN`, else the
//! kubeconfig's), which ork shows the API server to decide what the caller may see or do.

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// ork's HTTP address: `given`, else `$ORK_SERVER`, without a trailing `/`.
///
/// # Errors
/// Neither names one.
pub fn server(given: Option<String>) -> Result<String> {
    let server = given
        .or_else(|| std::env::var("ORK_SERVER").ok())
        .context(
            "where is ork? give its HTTP address with --server URL (or $ORK_SERVER), e.g. \
             after `kubectl -n ork-system port-forward deploy/ork 8080`: --server http://127.0.0.1:8080",
        )?;
    Ok(server.trim_end_matches('/').to_string())
}

/// The bearer token to show ork: `given`, else `$ORK_TOKEN`, else the kubeconfig user's.
///
/// # Errors
/// The kubeconfig's token file cannot be read.
pub fn token(given: Option<String>, config: &kube::Config) -> Result<Option<String>> {
    match given.or_else(|| std::env::var("ORK_TOKEN").ok()) {
        Some(t) => Ok(Some(t)),
        None => kubeconfig_token(config),
    }
}

/// ork's HTTP endpoints, asked with the caller's token.
pub struct Ork {
    http: reqwest::Client,
    server: String,
    token: Option<String>,
}

impl Ork {
    /// A client of the ork at `server`; `command` names the caller in the warning given when
    /// the token would cross the network in the clear.
    ///
    /// # Errors
    /// No HTTP client could be built.
    pub fn new(command: &str, server: String, token: Option<String>) -> Result<Ork> {
        if token.is_some()
            && let Some(host) = plain_http_remote_host(&server)
        {
            eprintln!(
                "{command}: warning: sending your bearer token over plain http:// to {host}, which is not loopback: anyone on the way can read it and act as you. Use `kubectl port-forward` and --server http://127.0.0.1:PORT, or https://"
            );
        }
        let http = reqwest::Client::builder()
            .build()
            .context("an HTTP client")?;
        Ok(Ork {
            http,
            server,
            token,
        })
    }

    /// `GET path`, its JSON answer.
    ///
    /// # Errors
    /// ork cannot be reached, refuses, or does not answer JSON.
    pub async fn get(&self, path: &str) -> Result<Value> {
        self.send(self.http.get(format!("{}{path}", self.server)), path)
            .await
    }

    /// `POST path` with no body, its JSON answer.
    ///
    /// # Errors
    /// ork cannot be reached, refuses, or does not answer JSON.
    pub async fn post(&self, path: &str) -> Result<Value> {
        self.send(self.http.post(format!("{}{path}", self.server)), path)
            .await
    }

    async fn send(&self, mut req: reqwest::RequestBuilder, path: &str) -> Result<Value> {
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("asking ork at {}{path}", self.server))?;
        let status = resp.status();
        let body = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            bail!("ork answered {status} for {path}: {}", body.trim());
        }
        serde_json::from_str::<Value>(&body)
            .with_context(|| format!("ork's answer for {path} is not JSON"))
    }
}

/// The bearer token of the kubeconfig's user, if it has one (a client certificate has none).
fn kubeconfig_token(config: &kube::Config) -> Result<Option<String>> {
    use secrecy::ExposeSecret;
    if let Some(t) = &config.auth_info.token {
        return Ok(Some(t.expose_secret().to_string()));
    }
    match &config.auth_info.token_file {
        Some(file) => Ok(Some(
            std::fs::read_to_string(file)
                .with_context(|| format!("reading the kubeconfig's token file {file}"))?
                .trim()
                .to_string(),
        )),
        None => Ok(None),
    }
}

/// The host of `server` when it is plain `http://` to a host that is not loopback: a token sent
/// there crosses the network readable (finding L8 of issue 47).
fn plain_http_remote_host(server: &str) -> Option<String> {
    let url = reqwest::Url::parse(server).ok()?;
    if url.scheme() != "http" {
        return None;
    }
    let host = url.host_str()?;
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    (!loopback).then(|| host.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_over_plain_http_to_another_host_is_named() {
        for server in ["http://10.0.0.7:8080", "http://ork.example:8080/"] {
            assert!(plain_http_remote_host(server).is_some(), "{server}");
        }
        for server in [
            "http://127.0.0.1:8080",
            "http://localhost:8080",
            "http://[::1]:8080",
            "https://ork.example:8443",
        ] {
            assert_eq!(plain_http_remote_host(server), None, "{server}");
        }
    }
}
