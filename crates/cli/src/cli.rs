//! Command-line parsing and dispatch.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "ork",
    version,
    about = "Kubernetes operators whose reconcile logic is an HTTP endpoint"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check a Katalog and print one line per entry; every problem with file, line and field.
    Validate {
        /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
        #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
        katalog: PathBuf,
    },
    /// Run the remote reconcilers of a Katalog against the cluster.
    Run(RunArgs),
    /// Run the reconcile pipeline against an in-memory cluster and the real service, cycle by cycle.
    Simulate(SimulateArgs),
    /// Send each CR's request to the entry's service once and report every way the answers
    /// break the protocol.
    Check(CheckArgs),
    /// Print a JSON Schema (draft 2020-12) of the Katalog, the request or the response.
    Schema {
        #[arg(value_parser = ["katalog", "request", "response"])]
        what: String,
    },
    /// Generate what running ork in a cluster needs, derived from the Katalog.
    #[command(subcommand)]
    Generate(Generate),
    /// Reconcile a CR now: sets its `orkestra.orkspace.io/requested-at` annotation, which
    /// makes ork start its backoff over and reconcile it at once.
    Retry {
        /// The CR as KIND/NAME (kind, plural or Kind.group), e.g. `webapp/hello`.
        target: String,
        /// Its namespace (default: the kubeconfig's).
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Kubeconfig context.
        #[arg(long)]
        context: Option<String>,
    },
}

/// The Katalog every command reads when `-k` is not given.
const DEFAULT_KATALOG: &str = "./katalog.yaml";

impl Command {
    /// The Katalog file the command reads, if it reads one.
    fn katalog(&self) -> Option<&Path> {
        match self {
            Command::Validate { katalog }
            | Command::Generate(Generate::Rbac { katalog, .. })
            | Command::Generate(Generate::Bundle(Install { katalog, .. }))
            | Command::Generate(Generate::Values(Install { katalog, .. })) => Some(katalog),
            Command::Run(args) => Some(&args.katalog),
            Command::Simulate(args) => Some(&args.katalog),
            Command::Check(args) => Some(&args.katalog),
            Command::Schema { .. } | Command::Retry { .. } => None,
        }
    }
}

/// The folder a Katalog file is in (`.` for a bare file name): relative exec commands start there.
pub fn folder_of(katalog: &std::path::Path) -> PathBuf {
    katalog
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), std::path::Path::to_path_buf)
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(path) = cli.command.katalog()
        && path == Path::new(DEFAULT_KATALOG)
        && !path.exists()
    {
        eprintln!(
            "ork: no Katalog: there is no {DEFAULT_KATALOG} here\n    hint: run ork in the Katalog's folder or give the file with -k FILE"
        );
        return ExitCode::from(2);
    }
    match cli.command {
        Command::Validate { katalog } => crate::validate::run(&katalog),
        Command::Run(args) => crate::run::run(args),
        Command::Simulate(args) => crate::simulate::run(args),
        Command::Check(args) => crate::simulate::check(args),
        Command::Schema { what } => {
            let schema = match what.as_str() {
                "katalog" => schemars::schema_for!(ork_katalog::Katalog),
                "request" => schemars::schema_for!(ork_protocol::Request),
                _ => schemars::schema_for!(ork_protocol::Response),
            };
            match serde_json::to_string_pretty(&schema) {
                Ok(text) => {
                    crate::output::say!("{text}");
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("ork schema: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Generate(Generate::Rbac { katalog, target }) => {
            crate::generate::rbac(&katalog, &target.names())
        }
        Command::Retry {
            target,
            namespace,
            kubeconfig,
            context,
        } => crate::retry::retry(crate::retry::RetryArgs {
            target,
            namespace,
            kubeconfig,
            context,
        }),
        Command::Generate(Generate::Bundle(i)) => {
            crate::generate::bundle(&i.katalog, &i.target.names(), &i.image, i.scale())
        }
        Command::Generate(Generate::Values(i)) => {
            crate::generate::values(&i.katalog, &i.target.names(), &i.image, i.scale())
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
    #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
    pub katalog: PathBuf,
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
    /// Address of /healthz, /readyz, /metrics and /katalog (`none` to serve nothing).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub http_addr: String,
    /// Serve /katalog without a token to callers on loopback (local development). Otherwise a
    /// caller needs a bearer token of a user the API server allows to list the entry's CRs;
    /// note that `kubectl port-forward` traffic arrives on the pod's loopback.
    #[arg(long, env = "ORK_UNAUTHENTICATED_LOOPBACK")]
    pub unauthenticated_loopback: bool,
    /// Reconcile only while holding the Lease `orkestra-konductor` in ork's namespace.
    #[arg(long)]
    pub leader_elect: bool,
    /// How long a leader's lease stays valid without renewal.
    #[arg(long, default_value = "15s", value_parser = humantime::parse_duration)]
    pub lease_duration: std::time::Duration,
    /// On SIGTERM, how long in-flight reconciles may take to finish.
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
    /// Speak HTTP/1.1 only with the API server (one connection per request in flight), for a
    /// proxy or load balancer in between that mishandles HTTP/2. By default every request and
    /// watch shares one HTTP/2 connection where the API server offers it, as client-go does.
    #[arg(long, env = "ORK_API_HTTP1")]
    pub api_http1: bool,
}

#[derive(Debug, Subcommand)]
enum Generate {
    /// ork's Namespace and ServiceAccount, and (Cluster)Roles and bindings with exactly the
    /// permissions the Katalog needs: in one namespace for an entry that watches one.
    Rbac {
        /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
        #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
        katalog: PathBuf,
        #[command(flatten)]
        target: Target,
    },
    /// Everything to run ork in a cluster: namespace, the CRDs of `crdFile`s, RBAC, the Katalog
    /// (and the files it names) as a ConfigMap, a Deployment running `ork run --no-dev-files`,
    /// a Service for its metrics.
    Bundle(Install),
    /// Values for the Helm chart `charts/ork`: the Katalog, the files it names, its CRDs and the
    /// RBAC it needs (as `generate rbac`), with the workload settings of `generate bundle`.
    Values(Install),
}

/// How ork is installed: `generate bundle` and `generate values` alike.
#[derive(Debug, clap::Args)]
struct Install {
    /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
    #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
    katalog: PathBuf,
    #[command(flatten)]
    target: Target,
    /// The ork container image (see the Dockerfile).
    #[arg(long, default_value = concat!("ork:", env!("CARGO_PKG_VERSION")))]
    image: String,
    /// Shards (SPEC §12): 1 runs one leader (`--leader-elect`), more run `--shards N`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    shards: u32,
    /// Replicas of the Deployment.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    replicas: u32,
}

impl Install {
    fn scale(&self) -> crate::generate::Scale {
        crate::generate::Scale {
            shards: self.shards,
            replicas: self.replicas,
        }
    }
}

#[derive(Debug, clap::Args)]
struct Target {
    /// Namespace ork runs in (holds its ServiceAccount, Lease and ConfigMap).
    #[arg(long, default_value = "ork-system")]
    namespace: String,
    /// Name of the ServiceAccount, ClusterRole, ClusterRoleBinding and Deployment.
    #[arg(long, default_value = "ork")]
    name: String,
}

impl Target {
    fn names(&self) -> crate::generate::Names {
        crate::generate::Names {
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct SimulateArgs {
    /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
    #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
    pub katalog: PathBuf,
    /// A file of CRs to reconcile (several documents allowed); repeatable.
    #[arg(long = "cr", required = true)]
    pub crs: Vec<PathBuf>,
    /// A CRD file, for the scope and kind of custom managed types; repeatable.
    #[arg(long = "crd")]
    pub crds: Vec<PathBuf>,
    /// Stop after this many cycles if no steady state is reached.
    #[arg(long, default_value_t = 10)]
    pub cycles: usize,
    /// Output format.
    #[arg(short = 'o', long = "output", default_value = "text", value_parser = ["text", "json"])]
    pub output: String,
    /// Save each request and answer in this folder.
    #[arg(long, conflicts_with = "replay")]
    pub record: Option<PathBuf>,
    /// Answer from a folder saved with --record instead of calling the service.
    #[arg(long)]
    pub replay: Option<PathBuf>,
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
}
