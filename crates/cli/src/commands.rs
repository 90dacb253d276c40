//! The command line as clap parses it: every command, its flags and their help. `cli.rs`
//! dispatches what it parsed; the reference page of the commands is made from it.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser, Subcommand};

use crate::args::{CheckArgs, DEFAULT_KATALOG, RunArgs, SimulateArgs};

#[derive(Debug, Parser)]
#[command(
    name = "ork",
    version,
    about = "Kubernetes operators whose reconcile logic is an HTTP endpoint"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Scaffold a working operator in a new folder: a Katalog, a CRD (its schema inferred from
    /// a sample CR), a reconcile service in Python or bash, `ork test` cases and a README of
    /// the next commands.
    Init(crate::init::InitArgs),
    /// Check a Katalog and print one line per entry; every problem with file, line and field.
    Validate {
        /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
        #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
        katalog: PathBuf,
        /// Also check against the kubeconfig's cluster: managed types served, the CRDs and
        /// their versions, template fields against the CRD schema, the permissions the
        /// current identity lacks.
        #[arg(long)]
        cluster: bool,
        /// Kubeconfig file for --cluster (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
        #[arg(long, requires = "cluster")]
        kubeconfig: Option<PathBuf>,
        /// Kubeconfig context for --cluster.
        #[arg(long, requires = "cluster")]
        context: Option<String>,
    },
    /// Run the remote reconcilers of a Katalog against the cluster.
    Run(RunArgs),
    /// Run the reconcile pipeline against an in-memory cluster and the real service, cycle by cycle.
    Simulate(SimulateArgs),
    /// Send each CR's request to the entry's service once and report every way the answers
    /// break the protocol.
    Check(CheckArgs),
    /// Check an entry's service against the protocol: requests made from the CRD's schema and
    /// edge cases (finalizing, unknown request fields, a large object, the same request twice,
    /// concurrent keys); one PASS or FAIL line per check.
    Conform(crate::conform::ConformArgs),
    /// What the Katalog, or a candidate endpoint, would change on every live CR: the real
    /// request and answer, the plan, every write a server-side dry run. Writes nothing; exits
    /// 1 when a CR would be refused or lose a child.
    Diff(crate::diff::DiffArgs),
    /// Run Orkestra's `kind: E2E` specs against the kubeconfig's cluster.
    E2e(crate::e2e::E2eArgs),
    /// Run `kind: Test` cases (given CRs and objects, expected children, status, conditions,
    /// events or an error) through the pipeline of `simulate` and the real service.
    Test(crate::testcase::TestArgs),
    /// Print a JSON Schema (draft 2020-12) of the Katalog, the request or the response.
    Schema {
        #[arg(value_parser = ["katalog", "request", "response"])]
        what: String,
    },
    /// Generate what running ork in a cluster needs, derived from the Katalog.
    #[command(subcommand)]
    Generate(Generate),
    /// Why a CR is or is not Ready: its conditions, where it stands, the plan for its children,
    /// its last reconciles, the last request and answer (exit code 0 only when Ready).
    Explain {
        /// The CR as KIND/NAME (kind, plural or Kind.group), e.g. `webapp/hello`.
        target: String,
        /// Its namespace (default: the kubeconfig's).
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// ork's HTTP address (default: $ORK_SERVER), e.g. http://127.0.0.1:8080 after
        /// `kubectl port-forward`.
        #[arg(long)]
        server: Option<String>,
        /// The bearer token to show ork (default: $ORK_TOKEN, else the kubeconfig's); ork asks
        /// the API server whether its holder may get the CR.
        #[arg(long)]
        token: Option<String>,
        /// Write the last exchange in `ork simulate --replay` format, and the CR, to DIR.
        #[arg(long, value_name = "DIR")]
        save: Option<PathBuf>,
        /// Print everything as JSON.
        #[arg(long)]
        json: bool,
        /// Print every recorded reconcile and the last request and answer whole (by default a
        /// summary: the ten newest reconciles, and what the request and answer held).
        #[arg(long)]
        full: bool,
        /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Kubeconfig context.
        #[arg(long)]
        context: Option<String>,
    },
    /// Write the book's reference pages (docs/reference) from the code, or with --check fail
    /// when they differ from it.
    #[command(hide = true)]
    Reference {
        dir: PathBuf,
        #[arg(long)]
        check: bool,
    },
    /// Reconcile a CR now, or with --all every CR of a kind: sets each one's
    /// `orkestra.orkspace.io/requested-at` annotation, which makes ork start its backoff over
    /// and reconcile it at once.
    Retry {
        /// The CR as KIND/NAME (kind, plural or Kind.group), e.g. `webapp/hello`; with --all
        /// the kind alone.
        target: String,
        /// Its namespace (default: the kubeconfig's; with --all, every namespace).
        #[arg(short = 'n', long)]
        namespace: Option<String>,
        /// Every CR of the kind (after a service deploy, so that healthy CRs get its answer
        /// now rather than at their next resync), paced by --rate.
        #[arg(long)]
        all: bool,
        /// With --all: only CRs with these labels.
        #[arg(short = 'l', long, requires = "all")]
        selector: Option<String>,
        /// With --all: CRs asked per second.
        #[arg(long, default_value_t = 10.0, requires = "all")]
        rate: f64,
        /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Kubeconfig context.
        #[arg(long)]
        context: Option<String>,
    },
    /// Where an entry's progressive rollout stands, or steer it (SPEC §19): `status`, `promote`
    /// (every CR on the candidate), `abort` (every CR back on the stable endpoint), `resume`
    /// (a halted rollout from its first share). Asked of the running ork, which lets only a
    /// caller the API server allows to patch the entry's CRs steer it.
    Rollout {
        /// status, promote, abort or resume.
        #[arg(value_enum)]
        action: crate::rollout::Action,
        /// The entry (its name in the Katalog).
        #[arg(long)]
        entry: String,
        /// ork's HTTP address (default: $ORK_SERVER), e.g. http://127.0.0.1:8080 after
        /// `kubectl port-forward`.
        #[arg(long)]
        server: Option<String>,
        /// The bearer token to show ork (default: $ORK_TOKEN, else the kubeconfig's).
        #[arg(long)]
        token: Option<String>,
        /// Print the rollout as JSON.
        #[arg(long)]
        json: bool,
        /// Kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
        #[arg(long)]
        kubeconfig: Option<PathBuf>,
        /// Kubeconfig context.
        #[arg(long)]
        context: Option<String>,
    },
}

/// The argument parser, for the reference page of every command and flag.
pub(crate) fn command() -> clap::Command {
    Cli::command()
}

impl Command {
    /// The Katalog file the command reads, if it reads one.
    pub fn katalog(&self) -> Option<&Path> {
        match self {
            // Controllers alone need no Katalog.
            Command::Generate(Generate::Rbac {
                controllers,
                metacontroller,
                ..
            }) if *metacontroller || !controllers.is_empty() => None,
            Command::Validate { katalog, .. }
            | Command::Generate(Generate::Rbac { katalog, .. })
            | Command::Generate(Generate::Bundle(Install { katalog, .. }))
            | Command::Generate(Generate::Values(Install { katalog, .. })) => Some(katalog),
            // Controllers alone need no Katalog.
            Command::Run(args) if args.metacontroller || !args.controllers.is_empty() => None,
            Command::Run(args) => Some(&args.katalog),
            Command::Simulate(args) if !args.files.is_empty() || !args.controllers.is_empty() => {
                None
            }
            Command::Simulate(args) => Some(&args.katalog),
            Command::Check(args) if !args.controllers.is_empty() => None,
            Command::Check(args) => Some(&args.katalog),
            Command::Conform(args) if !args.controllers.is_empty() => None,
            Command::Conform(args) => Some(&args.katalog),
            Command::Diff(args) => Some(&args.katalog),
            Command::Schema { .. }
            | Command::Retry { .. }
            | Command::Reference { .. }
            | Command::Explain { .. }
            | Command::Rollout { .. }
            | Command::Generate(Generate::Kubeconfig(_))
            | Command::E2e(_)
            | Command::Init(_)
            | Command::Test(_) => None,
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Generate {
    /// ork's Namespace and ServiceAccount, and (Cluster)Roles and bindings with exactly the
    /// permissions the Katalog needs: in its namespaces for an entry that watches named ones.
    Rbac {
        /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
        #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
        katalog: PathBuf,
        /// Also grant what the Metacontroller controllers in these files need: their parent
        /// and child types, cluster-wide (never `*`).
        #[arg(long = "controllers", value_name = "FILE")]
        controllers: Vec<PathBuf>,
        /// Also grant what `ork run --metacontroller` needs to watch the cluster's controllers
        /// and install their CRDs (their types still come from --controllers).
        #[arg(long)]
        metacontroller: bool,
        #[command(flatten)]
        target: Target,
    },
    /// Everything to run ork in a cluster: namespace, the CRDs of `crdFile`s, RBAC, the Katalog
    /// (and the files it names) as a ConfigMap, a Deployment running `ork run --no-dev-files`,
    /// a Service for its metrics.
    Bundle(Install),
    /// A kubeconfig that authenticates as a ServiceAccount (the one `ork generate rbac` binds),
    /// with a token of the TokenRequest API, for the cluster of the current context: `ork run
    /// --kubeconfig FILE` then runs as exactly the identity the generated RBAC grants.
    Kubeconfig(crate::kubeconfig::KubeconfigArgs),
    /// Values for the Helm chart `charts/ork`: the Katalog, the files it names, its CRDs and the
    /// RBAC it needs (as `generate rbac`), with the workload settings of `generate bundle`.
    Values(Install),
}

/// How ork is installed: `generate bundle` and `generate values` alike.
#[derive(Debug, clap::Args)]
pub(crate) struct Install {
    /// The Katalog file (default: ./katalog.yaml, as Orkestra's commands).
    #[arg(short = 'k', long = "katalog", default_value = DEFAULT_KATALOG)]
    pub katalog: PathBuf,
    #[command(flatten)]
    pub target: Target,
    /// The ork container image (see the Dockerfile).
    #[arg(long, default_value = concat!("ork:", env!("CARGO_PKG_VERSION")))]
    pub image: String,
    /// Shards (SPEC §12): 1 runs one leader (`--leader-elect`), more run `--shards N`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub shards: u32,
    /// Replicas of the Deployment.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub replicas: u32,
}

impl Install {
    pub fn scale(&self) -> crate::generate::Scale {
        crate::generate::Scale {
            shards: self.shards,
            replicas: self.replicas,
        }
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct Target {
    /// Namespace ork runs in (holds its ServiceAccount, Lease and ConfigMap).
    #[arg(long, default_value = "ork-system")]
    namespace: String,
    /// Name of the ServiceAccount, Roles, RoleBindings, Deployment, ClusterRole and
    /// ClusterRoleBinding [default: `ork`, and `ork-<Katalog name>` for the ClusterRole and
    /// ClusterRoleBinding, whose names every team of a cluster shares].
    #[arg(long)]
    name: Option<String>,
}

impl Target {
    pub fn names(&self) -> crate::generate::Names {
        crate::generate::Names {
            namespace: self.namespace.clone(),
            name: self.name.clone().unwrap_or_else(|| "ork".to_string()),
            chosen: self.name.is_some(),
        }
    }
}
