//! `ork generate kubeconfig --service-account NS/NAME`: a kubeconfig that authenticates as a
//! ServiceAccount (the one `ork generate rbac` binds), with a token of the TokenRequest API and
//! the cluster of the current kubeconfig context, so that ork can be run as exactly the identity
//! its generated RBAC grants.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use kube::config::Kubeconfig;
use ork_kube::client::Protocol;
use serde_json::{Value, json};

/// The shortest token the API server issues (`expirationSeconds` below it is refused).
const SHORTEST: Duration = Duration::from_secs(600);

#[derive(Debug, clap::Args)]
pub struct KubeconfigArgs {
    /// The ServiceAccount as NAMESPACE/NAME: `ork-system/ork` is the one `ork generate rbac`
    /// binds by default.
    #[arg(long, value_name = "NS/NAME", value_parser = parse_account)]
    pub service_account: Account,
    /// How long the token is valid, at least 10m (the API server may cap it lower).
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    pub duration: Duration,
    /// Write the kubeconfig to FILE, readable by its owner only (0600), instead of stdout.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The kubeconfig whose context names the cluster and whose identity asks for the token
    /// (default: $KUBECONFIG or ~/.kube/config).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// That kubeconfig's context (default: its current context).
    #[arg(long)]
    pub context: Option<String>,
}

/// A ServiceAccount named on the command line.
#[derive(Debug, Clone)]
pub struct Account {
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for Account {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

fn parse_account(text: &str) -> Result<Account, String> {
    match text.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok(Account {
                namespace: ns.to_string(),
                name: name.to_string(),
            })
        }
        _ => Err(format!(
            "{text:?} is not NAMESPACE/NAME (e.g. ork-system/ork)"
        )),
    }
}

pub fn run(args: KubeconfigArgs) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ork generate kubeconfig: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(generate(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ork generate kubeconfig: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The cluster a kubeconfig context points at: its name and its `cluster` block as written
/// (server, CA, TLS server name, proxy), a relative CA file already made absolute by kube.
struct Cluster {
    name: String,
    block: Value,
}

async fn generate(args: &KubeconfigArgs) -> Result<()> {
    if args.duration < SHORTEST {
        bail!(
            "--duration {}: the API server issues tokens for 10m at least",
            humantime::format_duration(args.duration)
        );
    }
    let cluster = current_cluster(args)?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = crate::run::connect(
        args.kubeconfig.clone(),
        args.context.clone(),
        Protocol::Http1,
    )
    .await?;
    let account = &args.service_account;
    let (token, expires) = request_token(client, account, args.duration).await?;
    let user = format!(
        "system:serviceaccount:{}:{}",
        account.namespace, account.name
    );
    let context = account.to_string();
    let document = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster.name, "cluster": cluster.block}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": context, "context": {
            "cluster": cluster.name, "user": user, "namespace": account.namespace,
        }}],
        "current-context": context,
    });
    // The token on one line, as kubectl writes it, not folded over several.
    let options = serde_saphyr::ser_options! { prefer_block_scalars: false };
    let yaml = serde_saphyr::to_string_with_options(&document, options)
        .map_err(|e| anyhow!("cannot write YAML: {e}"))?;
    let until = expires.map_or_else(String::new, |t| format!(", valid until {t}"));
    match &args.output {
        Some(path) => {
            crate::output::write_private(path, yaml.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "wrote {}: ServiceAccount {account} on cluster {}{until}\n    run ork as it: ork run -k katalog.yaml --kubeconfig {}",
                path.display(),
                cluster.name,
                path.display()
            );
        }
        None => crate::output::emit(&yaml),
    }
    Ok(())
}

/// The cluster of `args`' context, read from the kubeconfig file(s) as kube reads them.
fn current_cluster(args: &KubeconfigArgs) -> Result<Cluster> {
    let config = match &args.kubeconfig {
        Some(path) => {
            Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?
        }
        None => Kubeconfig::read().map_err(|e| {
            anyhow!(
                "no kubeconfig to take the cluster from ({e}): set $KUBECONFIG or give one with --kubeconfig"
            )
        })?,
    };
    let wanted = args
        .context
        .clone()
        .or_else(|| config.current_context.clone())
        .context("the kubeconfig has no current context: give one with --context")?;
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == wanted)
        .and_then(|c| c.context.as_ref())
        .with_context(|| format!("the kubeconfig has no context {wanted:?}"))?;
    let named = config
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .with_context(|| {
            format!(
                "context {wanted:?} names cluster {:?}, which the kubeconfig lacks",
                context.cluster
            )
        })?;
    let block = named
        .cluster
        .as_ref()
        .with_context(|| format!("cluster {:?} has no server", named.name))?;
    Ok(Cluster {
        name: named.name.clone(),
        block: serde_json::to_value(block)?,
    })
}

/// A token of `account` valid for `duration` (the audience: the API server's own), and when it
/// expires as the API server says.
async fn request_token(
    client: kube::Client,
    account: &Account,
    duration: Duration,
) -> Result<(String, Option<String>)> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client, &account.namespace);
    let request = TokenRequest {
        spec: TokenRequestSpec {
            audiences: Vec::new(),
            expiration_seconds: Some(i64::try_from(duration.as_secs()).unwrap_or(i64::MAX)),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = match accounts
        .create_token_request(&account.name, &PostParams::default(), &request)
        .await
    {
        Ok(answer) => answer,
        Err(kube::Error::Api(status)) if status.code == 404 => bail!(
            "ServiceAccount {account} does not exist\n    hint: create it with the RBAC that binds it: ork generate rbac -k katalog.yaml --namespace {} | kubectl apply -f -",
            account.namespace
        ),
        Err(kube::Error::Api(status)) if status.code == 403 => bail!(
            "the kubeconfig's identity may not ask for tokens of ServiceAccount {account} (create serviceaccounts/token in {}): {}",
            account.namespace,
            status.message
        ),
        Err(e) => {
            return Err(e)
                .with_context(|| format!("asking for a token of ServiceAccount {account}"));
        }
    };
    let status = answer
        .status
        .with_context(|| format!("the API server gave no token for ServiceAccount {account}"))?;
    Ok((
        status.token,
        Some(status.expiration_timestamp.0.to_string()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_account_is_namespace_slash_name() {
        let a = parse_account("ork-system/ork").expect("valid");
        assert_eq!(
            (a.namespace.as_str(), a.name.as_str()),
            ("ork-system", "ork")
        );
        for bad in ["ork", "/ork", "ork-system/", "a/b/c"] {
            assert!(parse_account(bad).is_err(), "{bad}");
        }
    }
}
