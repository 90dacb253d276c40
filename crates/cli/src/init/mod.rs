//! `ork init NAME`: a working operator to start from, in a folder of its own: a Katalog with
//! one entry, the CRD (its schema inferred from a sample CR, or a minimal one), a reconcile
//! service in Python or bash, `ork test` cases for it and a README of the next commands.

mod files;
mod plan;
mod schema;
mod skeleton;

use plan::{CrType, Plan};

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::Value;

#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The operator's name: the Katalog's and its entry's, and the folder's unless --dir is
    /// given (lowercase letters, digits and `-`).
    pub name: String,
    /// The API group of the CR type [default: the --from-cr CR's, else example.com].
    #[arg(long)]
    pub group: Option<String>,
    /// The kind of the CR type [default: the --from-cr CR's, else NAME in CamelCase].
    #[arg(long)]
    pub kind: Option<String>,
    /// A sample CR (YAML): its apiVersion and kind give the type, its fields the CRD's schema
    /// (each field's type, nested objects and lists; what the sample cannot tell is kept as
    /// written).
    #[arg(long, value_name = "FILE")]
    pub from_cr: Option<PathBuf>,
    /// The reconcile service: an HTTP service in Python (standard library only), or a bash
    /// script that ork runs for each reconcile (`remote.command`; it needs jq).
    #[arg(long, default_value = "python", value_parser = ["python", "bash"])]
    pub lang: String,
    /// The folder to write, which must be absent or empty [default: ./NAME].
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// The loopback port the Python service listens on and the Katalog's endpoint calls.
    #[arg(long, default_value_t = 8030, value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
}

pub fn run(args: InitArgs) -> ExitCode {
    match init(&args) {
        Ok(lines) => {
            crate::output::emit(&lines);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ork init: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init(args: &InitArgs) -> Result<String> {
    let dir = args
        .dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(&args.name));
    refuse_to_overwrite(&dir)?;
    let plan = plan(args)?;
    let written = files::all(&plan);
    std::fs::create_dir_all(dir.join("test"))
        .with_context(|| format!("creating {}", dir.display()))?;
    for file in &written {
        let path = dir.join(file.path);
        std::fs::write(&path, &file.text).with_context(|| format!("writing {}", path.display()))?;
        if file.executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    let mut out = format!(
        "ork init: the {} operator ({} {}) in {}\n",
        plan.name,
        plan.cr_type.kind,
        plan.cr_type.api_version(),
        dir.display()
    );
    for file in &written {
        out.push_str(&format!("  {:<18} {}\n", file.path, file.what));
    }
    out.push_str(&format!(
        "next: cd {} and see README.md ({})\n",
        dir.display(),
        if plan.python {
            format!(
                "start the service with python3 reconciler.py, then ork test; it listens on 127.0.0.1:{}",
                plan.port
            )
        } else {
            "ork test runs ./reconcile.sh itself".to_string()
        }
    ));
    Ok(out)
}

/// An existing file, or a folder with anything in it, is someone's work: never written over.
fn refuse_to_overwrite(dir: &Path) -> Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "{} exists and is not empty: ork init writes only into a new or empty folder (give another with --dir)",
                    dir.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) if dir.exists() => bail!(
            "{} exists and is not a folder: ork init writes only into a new or empty folder (give another with --dir)",
            dir.display()
        ),
        Err(e) => Err(e).with_context(|| format!("reading {}", dir.display())),
    }
}

fn plan(args: &InitArgs) -> Result<Plan> {
    check_name(&args.name)?;
    let sample = match &args.from_cr {
        Some(file) => Some(read_sample(file)?),
        None => None,
    };
    let from = |field: &str| {
        sample
            .as_ref()
            .and_then(|s| s.get(field))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let (sample_group, sample_version) = match from("apiVersion") {
        Some(av) => match av.split_once('/') {
            Some((g, v)) => (Some(g.to_string()), Some(v.to_string())),
            None => bail!(
                "{}: apiVersion {av:?} has no group: a CRD's type is GROUP/VERSION",
                display(args.from_cr.as_deref())
            ),
        },
        None => (None, None),
    };
    let group = args
        .group
        .clone()
        .or(sample_group)
        .unwrap_or_else(|| "example.com".into());
    check_group(&group)?;
    let kind = args
        .kind
        .clone()
        .or_else(|| from("kind"))
        .unwrap_or_else(|| camel_case(&args.name));
    check_kind(&kind)?;
    let version = sample_version.unwrap_or_else(|| "v1".into());
    let singular = kind.to_lowercase();
    let cr_type = CrType {
        plural: plural_of(&singular),
        singular,
        group,
        version,
        kind,
    };
    let schema = schema::cr_schema(sample.as_ref());
    Ok(Plan {
        sample: files::sample_cr(&cr_type, sample.as_ref()),
        name: args.name.clone(),
        cr_type,
        schema,
        inferred: sample.is_some(),
        python: args.lang == "python",
        port: args.port,
    })
}

fn display(path: Option<&Path>) -> String {
    path.map_or_else(|| "the sample".into(), |p| p.display().to_string())
}

fn read_sample(file: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let value: Value = serde_saphyr::from_str(&text)
        .map_err(|e| anyhow::anyhow!("{} is not one YAML document: {e}", file.display()))?;
    if !value.is_object() {
        bail!(
            "{}: a CR is a YAML map (apiVersion, kind, metadata, spec)",
            file.display()
        );
    }
    Ok(value)
}

/// NAME names a Katalog, its entry and usually a folder and a Deployment: a DNS label.
fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !ok {
        bail!(
            "{name:?} is not an operator name: lowercase letters, digits and '-', at most 63, e.g. tenant or web-app"
        );
    }
    Ok(())
}

fn check_group(group: &str) -> Result<()> {
    let label = |l: &str| {
        !l.is_empty()
            && l.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    };
    if !group.contains('.') || group.len() > 253 || !group.split('.').all(label) {
        bail!(
            "group {group:?}: a CRD's group is a lowercase domain with a dot, e.g. example.com or platform.acme.io"
        );
    }
    Ok(())
}

fn check_kind(kind: &str) -> Result<()> {
    let mut chars = kind.chars();
    let ok = chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric())
        && kind.len() <= 63;
    if !ok {
        bail!("kind {kind:?}: a kind is CamelCase letters and digits, e.g. Tenant or WebApp");
    }
    Ok(())
}

/// `web-app` → `WebApp`.
fn camel_case(name: &str) -> String {
    name.split('-')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<String>()
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .to_string()
}

/// English plural of a lowercase kind, as the Kubernetes tools make it.
fn plural_of(singular: &str) -> String {
    let consonant_y = singular.ends_with('y')
        && !singular.ends_with("ay")
        && !singular.ends_with("ey")
        && !singular.ends_with("oy")
        && !singular.ends_with("uy");
    if consonant_y {
        format!("{}ies", &singular[..singular.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"]
        .iter()
        .any(|e| singular.ends_with(e))
    {
        format!("{singular}es")
    } else {
        format!("{singular}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_kinds_and_kinds_plurals() {
        assert_eq!(camel_case("web-app"), "WebApp");
        assert_eq!(camel_case("tenant"), "Tenant");
        assert_eq!(plural_of("tenant"), "tenants");
        assert_eq!(plural_of("policy"), "policies");
        assert_eq!(plural_of("gateway"), "gateways");
        assert_eq!(plural_of("ingress"), "ingresses");
    }

    #[test]
    fn a_name_group_or_kind_kubernetes_would_refuse_is_refused_with_an_example() {
        assert!(check_name("Tenant").is_err());
        assert!(check_name("-x").is_err());
        assert!(check_name("web-app").is_ok());
        assert!(check_group("example").is_err());
        assert!(check_group("Acme.io").is_err());
        assert!(check_group("platform.acme.io").is_ok());
        assert!(check_kind("tenant").is_err());
        assert!(check_kind("WebApp").is_ok());
    }
}
