//! The arguments of the commands that run the engine (`run`, `simulate`, `check`), shared by the
//! parser in `cli` and the modules that carry them out.

use std::path::{Path, PathBuf};

/// The Katalog every command reads when `-k` is not given.
pub const DEFAULT_KATALOG: &str = "./katalog.yaml";

/// The folder a Katalog file is in (`.` for a bare file name): relative exec commands start there.
pub fn folder_of(katalog: &Path) -> PathBuf {
    katalog
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
    #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
    pub katalog: PathBuf,
    /// Also run Metacontroller's CompositeControllers found in the cluster (SPEC §15),
    /// installing their CRDs when absent; controllers created, changed or deleted while ork
    /// runs take effect at once. The Katalog is then optional.
    #[arg(long)]
    pub metacontroller: bool,
    /// Also run the Metacontroller CompositeControllers in these files (YAML, one or more
    /// documents each). The Katalog is then optional.
    #[arg(long = "controllers", value_name = "FILE")]
    pub controllers: Vec<PathBuf>,
    /// Run only the Metacontroller controllers whose labels this selector selects (`key=value`,
    /// `key!=value`, `key in (a,b)`, `key notin (a,b)`, `key`, `!key`, comma-separated), as
    /// Metacontroller's flag of the same name: several instances split one cluster's
    /// controllers between them.
    #[arg(long = "target-label-selector", value_name = "SELECTOR")]
    pub target_label_selector: Option<String>,
    /// Reconciles in flight at once for each Metacontroller controller (Metacontroller's
    /// `--workers`).
    #[arg(
        long = "controller-workers",
        value_name = "N",
        default_value_t = 5,
        env = "ORK_CONTROLLER_WORKERS"
    )]
    pub controller_workers: u32,
    /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context to use.
    #[arg(long)]
    pub context: Option<String>,
    /// Log as JSON lines instead of text.
    #[arg(long)]
    pub log_json: bool,
    /// The least important of ork's log lines shown: error, warn, info, debug or trace
    /// (libraries stay quiet; `RUST_LOG` overrides both).
    #[arg(long, env = "ORK_LOG_LEVEL", default_value = "info", value_parser = ["error", "warn", "info", "debug", "trace"])]
    pub log_level: String,
    /// Address of the inspector: /katalog and the status page /status, for callers the API
    /// server allows to read the CRs (`none` to serve neither).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub http_addr: String,
    /// Address of /healthz, /readyz and /metrics, open to any caller, on a listener of their
    /// own so that the inspector's callers cannot starve the probes (`none` to serve them
    /// nowhere).
    #[arg(long, default_value = "127.0.0.1:8081")]
    pub probe_addr: String,
    /// Address of the admission webhook (HTTPS), served when an entry sets
    /// `remote.admission` (`none` to serve it nowhere).
    #[arg(long, default_value = "0.0.0.0:9443")]
    pub webhook_addr: String,
    /// Register the webhook configurations of the entries with admission, calling this
    /// process at `--webhook-url` (for development: the chart and `ork generate bundle` write
    /// them for a cluster).
    #[arg(long)]
    pub register_webhooks: bool,
    /// With --register-webhooks: the base URL the API server calls (default
    /// `https://127.0.0.1:<the webhook's port>`).
    #[arg(long, value_name = "URL")]
    pub webhook_url: Option<String>,
    /// Register the webhook configurations calling this Service (`NAMESPACE/NAME[:PORT]`, port
    /// 443 by default) in front of ork's Pods, as the bundle and the chart run ork; its DNS
    /// names join the serving certificate's.
    #[arg(long, value_name = "NAMESPACE/NAME[:PORT]")]
    pub webhook_service: Option<String>,
    /// Names and addresses the webhook's serving certificate is for, besides 127.0.0.1,
    /// localhost and the host of --webhook-url (a Service's DNS names); repeatable.
    #[arg(long = "webhook-host", value_name = "HOST")]
    pub webhook_hosts: Vec<String>,
    /// How long each serving certificate of the webhook is valid; a new one is minted from the
    /// CA after two thirds of it.
    #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
    pub webhook_cert_lifetime: std::time::Duration,
    /// Connections the inspector's listener holds at once; the next are closed at once (the
    /// probes' listener holds 64 of its own).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub http_max_connections: u32,
    /// How long a client may take to send a request's headers, on either listener.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub http_header_timeout: std::time::Duration,
    /// How long a connection may stay without a byte either way before it is closed, on either
    /// listener.
    #[arg(long, default_value = "60s", value_parser = humantime::parse_duration)]
    pub http_idle_timeout: std::time::Duration,
    /// Serve /katalog and /status without a token to callers on loopback (local development).
    /// Otherwise a caller needs a bearer token of a user the API server allows to list the
    /// entry's CRs; note that `kubectl port-forward` traffic arrives on the pod's loopback.
    #[arg(long, env = "ORK_UNAUTHENTICATED_LOOPBACK", value_parser = clap::builder::BoolishValueParser::new())]
    pub unauthenticated_loopback: bool,
    /// Reconcile only while holding the Lease `orkestra-konductor` in ork's namespace.
    #[arg(long)]
    pub leader_elect: bool,
    /// How long a leader's lease stays valid without renewal.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub lease_duration: std::time::Duration,
    /// On SIGTERM, how long in-flight reconciles may take to finish and the CR annotations and
    /// events they left may take to be written.
    #[arg(long, default_value = "20s", value_parser = humantime::parse_duration)]
    pub shutdown_grace: std::time::Duration,
    /// Do not apply the entries' `setup` and `crFiles` (development helpers); `crdFile` is
    /// still installed.
    #[arg(long)]
    pub no_dev_files: bool,
    /// Spread objects over this many shards, one Lease each; any number of replicas split them
    /// evenly and take over a lost replica's shards (SPEC §12). 1 = no sharding.
    #[arg(long, default_value_t = 1, conflicts_with = "leader_elect",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub shards: u32,
    /// Threads that run reconciles and watches. 1 (the default) runs all on one thread, which
    /// costs the least CPU per reconcile (under load it also gathers answers into fewer
    /// wake-ups); more help only when ork itself, not the API server or the services, is the
    /// limit (very large templates, many entries).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub threads: u16,
    /// With one thread, while 4 or more reconciles are in flight: how long it naps before it
    /// sleeps, so that one wake-up handles the answers that came meanwhile. Less CPU per
    /// reconcile where the machine is busy, up to this much more latency per answer; 0 turns it
    /// off (a machine with CPU to spare, where the workers set the pace). While only the
    /// annotations and events of the lower-priority lane are in flight, it naps 4 times as long.
    #[arg(long, default_value = "2ms", value_parser = humantime::parse_duration)]
    pub wake_nap: std::time::Duration,
    /// Share one HTTP/2 connection for every request and watch where the API server offers it
    /// (as client-go does): less CPU per reconcile, but under a sustained burst the one
    /// connection, not the API server, sets the pace (20,000 new CRs on 2 cores: 21 % longer to
    /// converge than over HTTP/1.1, with CPU to spare). By default ork speaks HTTP/1.1, one
    /// connection per request in flight, which also suits a proxy that mishandles HTTP/2.
    #[arg(long, env = "ORK_API_HTTP2", value_parser = clap::builder::BoolishValueParser::new())]
    pub api_http2: bool,
    /// HTTP/1.1 with the API server: the default now; accepted so that existing command lines
    /// keep working, and it wins over `--api-http2` (an `ORK_API_HTTP1=false` left in an
    /// environment does not make `--api-http2` a conflict).
    #[arg(long, hide = true, env = "ORK_API_HTTP1", value_parser = clap::builder::BoolishValueParser::new())]
    pub api_http1: bool,
}

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
    #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
    pub katalog: PathBuf,
    /// Orkestra's `kind: Simulate` files (default, without --cr: test/simulate.yaml or
    /// simulate.yaml next to the Katalog).
    pub files: Vec<PathBuf>,
    /// A file of CRs to reconcile (several documents allowed); repeatable.
    #[arg(long = "cr")]
    pub crs: Vec<PathBuf>,
    /// A CRD file, for the scope and kind of custom managed types; repeatable.
    #[arg(long = "crd")]
    pub crds: Vec<PathBuf>,
    /// Metacontroller controllers (CompositeController, DecoratorController) to run as well,
    /// or alone without a Katalog; their parents' kinds come from --crd files, built-in kinds or
    /// the CRs given. Repeatable.
    #[arg(long = "controllers", value_name = "FILE")]
    pub controllers: Vec<PathBuf>,
    /// Stop after this many cycles if no steady state is reached.
    #[arg(long, default_value_t = 10)]
    pub cycles: usize,
    /// Output format.
    #[arg(short = 'o', long = "output", default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    /// Print each created child whole and every line of each change (by default one line per
    /// created child and at most 12 lines of each change).
    #[arg(long)]
    pub full: bool,
    /// Save each request and answer in this folder.
    #[arg(long, conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer from a folder saved with --record instead of calling the service.
    #[arg(long)]
    pub replay: Option<PathBuf>,
    /// A file of objects the entries' `observe.inputs` read (Secrets, ConfigMaps, ...; several
    /// documents allowed), as if in the cluster; repeatable.
    #[arg(long = "input", value_name = "FILE")]
    pub inputs: Vec<PathBuf>,
    /// The value of key KEY of the Secret NAME (an `auth.secretRef`), read from FILE;
    /// repeatable. Without it, the Secret is read once from the kubeconfig's cluster if there
    /// is a kubeconfig.
    #[arg(long = "secret", value_name = "NAME/KEY=FILE", value_parser = crate::secrets::parse)]
    pub secrets: Vec<crate::secrets::SecretArg>,
}

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
    #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
    pub katalog: PathBuf,
    /// The entry whose service is checked.
    #[arg(long)]
    pub entry: String,
    /// A file of CRs to send (several documents allowed); repeatable.
    #[arg(long = "cr", required = true)]
    pub crs: Vec<PathBuf>,
    /// A CRD file, for the scope and kind of custom managed types; repeatable.
    #[arg(long = "crd")]
    pub crds: Vec<PathBuf>,
    /// Metacontroller controllers (CompositeController, DecoratorController) to run as well,
    /// or alone without a Katalog; their parents' kinds come from --crd files, built-in kinds or
    /// the CRs given. Repeatable.
    #[arg(long = "controllers", value_name = "FILE")]
    pub controllers: Vec<PathBuf>,
    /// The value of key KEY of the Secret NAME (an `auth.secretRef`), read from FILE;
    /// repeatable. Without it, the Secret is read once from the kubeconfig's cluster if there
    /// is a kubeconfig.
    #[arg(long = "secret", value_name = "NAME/KEY=FILE", value_parser = crate::secrets::parse)]
    pub secrets: Vec<crate::secrets::SecretArg>,
}
