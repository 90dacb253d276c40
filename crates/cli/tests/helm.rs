//! The Helm chart `charts/ork` (SPEC §13): it lints, its values are what `ork generate values`
//! prints, it renders the very objects `ork generate bundle` prints for the same Katalog (so the
//! two cannot drift apart), and it installs into the local cluster with the RBAC that
//! `ork generate rbac` derives. Helm is built by `cargo xtask test` (`$ORK_HELM`).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, Role, RoleBinding};
use kube::Api;
use ork_test_support::TestNamespace;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn chart() -> PathBuf {
    root().join("charts/ork")
}

fn helm() -> Command {
    let bin = std::env::var_os("ORK_HELM").unwrap_or_else(|| "helm".into());
    let mut cmd = Command::new(bin);
    cmd.current_dir(root())
        .env("KUBECONFIG", ork_test_support::kubeconfig_path())
        // Helm's own caches and config stay out of the user's home.
        .env(
            "HELM_CACHE_HOME",
            std::env::temp_dir().join("ork-helm/cache"),
        )
        .env(
            "HELM_CONFIG_HOME",
            std::env::temp_dir().join("ork-helm/config"),
        )
        .env("HELM_DATA_HOME", std::env::temp_dir().join("ork-helm/data"));
    cmd
}

/// Runs a command; its stdout, or an error with its stderr.
fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd.output().with_context(|| {
        format!("{cmd:?} (helm comes with `cargo xtask test`, or set ORK_HELM)")
    })?;
    if !out.status.success() {
        bail!(
            "{:?} failed: {}{}",
            cmd.get_args().collect::<Vec<_>>(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

fn ork(args: &[&str]) -> Result<String> {
    output(
        Command::new(env!("CARGO_BIN_EXE_ork"))
            .current_dir(root())
            .args(args),
    )
}

/// `ork generate values ARGS` written to a file of its own.
fn values_file(tag: &str, args: &[&str]) -> Result<PathBuf> {
    let path = std::env::temp_dir().join(format!("ork-helm-{tag}-{}.yaml", std::process::id()));
    let mut all = vec!["generate", "values"];
    all.extend_from_slice(args);
    std::fs::write(&path, ork(&all)?)?;
    Ok(path)
}

fn documents(yaml: &str) -> Vec<Value> {
    yaml.split("\n---")
        .flat_map(|d| d.strip_prefix("---").or(Some(d)))
        .filter_map(|d| serde_saphyr::from_str::<Value>(d).ok())
        .filter(|v| !v.is_null())
        .collect()
}

/// What a chart adds that a plain bundle has no use for, taken away: Helm's bookkeeping
/// labels, the release's instance label and the Katalog checksum that rolls pods on a change.
/// The bundle's Namespace goes too (`helm install --create-namespace` makes it).
fn comparable(docs: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = docs
        .into_iter()
        .filter(|d| d["kind"] != "Namespace")
        .map(|mut d| {
            for pointer in [
                "/metadata/labels",
                "/spec/selector/matchLabels",
                "/spec/selector",
                "/spec/template/metadata/labels",
            ] {
                if let Some(labels) = d.pointer_mut(pointer).and_then(Value::as_object_mut) {
                    for key in [
                        "app.kubernetes.io/instance",
                        "app.kubernetes.io/version",
                        "app.kubernetes.io/managed-by",
                        "helm.sh/chart",
                    ] {
                        labels.remove(key);
                    }
                }
            }
            if let Some(template) = d
                .pointer_mut("/spec/template/metadata")
                .and_then(Value::as_object_mut)
            {
                template.remove("annotations");
            }
            d
        })
        .collect();
    out.sort_by_key(|d| {
        (
            d["kind"].as_str().unwrap_or_default().to_string(),
            d["metadata"]["namespace"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            d["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )
    });
    out
}

/// `helm template` with the values `ork generate values ARGS` prints renders what
/// `ork generate bundle ARGS` prints, object for object.
fn renders_the_bundle(tag: &str, args: &[&str], namespace: &str) -> Result<()> {
    let mut with_ns = args.to_vec();
    with_ns.extend_from_slice(&["--namespace", namespace, "--image", "ork:test"]);
    let values = values_file(tag, &with_ns)?;
    let rendered = output(
        helm()
            .args(["template", "ork"])
            .arg(chart())
            .args(["--namespace", namespace, "-f"])
            .arg(&values),
    )?;
    let mut bundle_args = vec!["generate", "bundle"];
    bundle_args.extend_from_slice(&with_ns);
    let bundle = comparable(documents(&ork(&bundle_args)?));
    let chart = comparable(documents(&rendered));
    let kinds = |docs: &[Value]| -> Vec<String> {
        docs.iter()
            .map(|d| format!("{} {}", d["kind"], d["metadata"]["name"]))
            .collect()
    };
    assert_eq!(kinds(&chart), kinds(&bundle), "{tag}: the same objects");
    for (c, b) in chart.iter().zip(&bundle) {
        assert_eq!(c, b, "{tag}: {} {}", b["kind"], b["metadata"]["name"]);
    }
    let _ = std::fs::remove_file(values);
    Ok(())
}

#[test]
fn the_chart_lints() -> Result<()> {
    let out = output(
        helm()
            .args(["lint", "--strict"])
            .arg(chart())
            .args(["--namespace", "ork-system"]),
    )?;
    assert!(out.contains("0 chart(s) failed"), "{out}");
    Ok(())
}

#[test]
fn the_chart_s_values_are_what_generate_values_prints_for_the_example() -> Result<()> {
    let generated = ork(&["generate", "values", "-k", "examples/webapp/katalog.yaml"])?;
    let shipped = std::fs::read_to_string(chart().join("values.yaml"))?;
    assert!(
        generated == shipped,
        "charts/ork/values.yaml is stale: run `cargo run -q -p ork -- generate values -k examples/webapp/katalog.yaml > charts/ork/values.yaml`"
    );
    Ok(())
}

#[test]
fn the_chart_renders_what_generate_bundle_prints() -> Result<()> {
    renders_the_bundle(
        "webapp",
        &["-k", "examples/webapp/katalog.yaml"],
        "platform",
    )?;
    renders_the_bundle(
        "sharded",
        &[
            "-k",
            "examples/webapp/katalog.yaml",
            "--shards",
            "4",
            "--replicas",
            "3",
            "--name",
            "ork-sharded",
        ],
        "ork-system",
    )?;
    // crdFile, setup and crFiles: the CRD and the files mounted next to the Katalog.
    renders_the_bundle(
        "orkestra",
        &["-k", "examples/orkestra-remote/katalog.yaml"],
        "ork-system",
    )?;
    // An entry watching one namespace: a Role there, none cluster-wide.
    let dir = std::env::temp_dir().join(format!("ork-helm-team-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let text = std::fs::read_to_string(root().join("examples/webapp/katalog.yaml"))?.replace(
        "      description: A web application",
        "      namespace: team\n      description: A web application",
    );
    std::fs::write(dir.join("katalog.yaml"), text)?;
    let katalog = dir.join("katalog.yaml");
    renders_the_bundle("team", &["-k", &katalog.to_string_lossy()], "ork-system")?;
    // An entry with admission: the webhook's port, its Service, ork told to register it.
    let text = std::fs::read_to_string(root().join("examples/webapp/katalog.yaml"))?.replace(
        "            timeout: 10s\n",
        "            timeout: 10s\n            admission: {mutate: true}\n",
    );
    ensure!(text.contains("admission:"), "the admission fixture");
    std::fs::write(dir.join("admission.yaml"), text)?;
    let katalog = dir.join("admission.yaml");
    renders_the_bundle(
        "admission",
        &["-k", &katalog.to_string_lossy()],
        "ork-system",
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

#[test]
fn a_release_in_another_namespace_than_the_values_were_made_for_is_refused_with_the_fix() {
    let err = output(
        helm()
            .args(["template", "ork"])
            .arg(chart())
            .args(["--namespace", "elsewhere"]),
    )
    .expect_err("the RBAC was derived for ork-system");
    let text = format!("{err:#}");
    assert!(
        text.contains("generated for namespace \"ork-system\"")
            && text.contains("ork generate values -k katalog.yaml --namespace elsewhere"),
        "{text}"
    );
}

#[test]
fn an_existing_configmap_replaces_the_chart_s_katalog() -> Result<()> {
    let rendered = output(helm().args(["template", "ork"]).arg(chart()).args([
        "--namespace",
        "ork-system",
        "--set",
        "katalog.existingConfigMap=team-katalog",
    ]))?;
    let docs = documents(&rendered);
    assert!(
        !docs.iter().any(|d| d["kind"] == "ConfigMap"),
        "no ConfigMap of the chart's own"
    );
    let deployment = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .context("a Deployment")?;
    assert_eq!(
        deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"],
        "team-katalog"
    );
    Ok(())
}

/// The rules of the RBAC object `kind` named `name` (in `namespace`) of `ork generate rbac`.
fn generated_rules(docs: &[Value], kind: &str, namespace: Option<&str>) -> Option<Value> {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["namespace"].as_str() == namespace)
        .map(|d| d["rules"].clone())
}

fn helm_uninstall(release: &str, namespace: &str) {
    let _ = output(helm().args(["uninstall", release, "--namespace", namespace]));
}

#[tokio::test]
async fn the_chart_installs_into_the_local_cluster_with_the_rbac_generate_rbac_derives()
-> Result<()> {
    let client = ork_test_support::client().await?;
    let ns = TestNamespace::create(&client).await?;
    let release = format!("ork-{}", &ns.name["ork-test-".len()..]);
    let values = values_file(
        "install",
        &[
            "-k",
            "examples/webapp/katalog.yaml",
            "--namespace",
            &ns.name,
            "--name",
            &release,
        ],
    )?;
    // The WebApp CRD is the other tests' too: it stays theirs (the chart's CRDs are checked by
    // the rendering test above).
    let installed = output(
        helm()
            .args(["install", &release])
            .arg(chart())
            .args(["--namespace", &ns.name, "--set", "installCRDs=false", "-f"])
            .arg(&values),
    );
    let result = check_install(&client, &ns.name, &release).await;
    helm_uninstall(&release, &ns.name);
    let _ = std::fs::remove_file(&values);
    installed?;
    result?;
    let left = Api::<ClusterRole>::all(client.clone())
        .get_opt(&release)
        .await?;
    assert!(left.is_none(), "helm uninstall removes the ClusterRole");
    Ok(())
}

async fn check_install(client: &kube::Client, ns: &str, release: &str) -> Result<()> {
    let deployment = Api::<Deployment>::namespaced(client.clone(), ns)
        .get(release)
        .await?;
    let spec = deployment.spec.context("Deployment spec")?;
    assert_eq!(spec.replicas, Some(2));
    let pod = spec.template.spec.context("pod spec")?;
    assert_eq!(pod.service_account_name.as_deref(), Some(release));
    let container = &pod.containers[0];
    let args = container.args.clone().unwrap_or_default();
    assert!(args.contains(&"--leader-elect".to_string()), "{args:?}");
    let sc = container
        .security_context
        .clone()
        .context("securityContext")?;
    assert_eq!(sc.read_only_root_filesystem, Some(true));
    assert_eq!(sc.allow_privilege_escalation, Some(false));
    let pod_sc = pod.security_context.context("pod securityContext")?;
    assert_eq!(pod_sc.run_as_non_root, Some(true));
    assert_eq!(
        pod_sc.seccomp_profile.map(|p| p.type_),
        Some("RuntimeDefault".to_string())
    );
    assert!(container.liveness_probe.is_some() && container.readiness_probe.is_some());

    Api::<ServiceAccount>::namespaced(client.clone(), ns)
        .get(release)
        .await?;
    Api::<Service>::namespaced(client.clone(), ns)
        .get(&format!("{release}-metrics"))
        .await?;
    let cm = Api::<ConfigMap>::namespaced(client.clone(), ns)
        .get(&format!("{release}-katalog"))
        .await?;
    let katalog = std::fs::read_to_string(root().join("examples/webapp/katalog.yaml"))?;
    assert_eq!(
        cm.data.unwrap_or_default().get("katalog.yaml"),
        Some(&katalog),
        "the Katalog ConfigMap holds the Katalog as written"
    );

    let generated = documents(&ork(&[
        "generate",
        "rbac",
        "-k",
        "examples/webapp/katalog.yaml",
        "--namespace",
        ns,
        "--name",
        release,
    ])?);
    let cluster_role = Api::<ClusterRole>::all(client.clone()).get(release).await?;
    assert_eq!(
        Some(serde_json::to_value(&cluster_role.rules)?),
        generated_rules(&generated, "ClusterRole", None),
        "the ClusterRole's rules are those of `ork generate rbac`"
    );
    let role = Api::<Role>::namespaced(client.clone(), ns)
        .get(release)
        .await?;
    assert_eq!(
        Some(serde_json::to_value(&role.rules)?),
        generated_rules(&generated, "Role", Some(ns)),
        "the Role's rules are those of `ork generate rbac`"
    );
    let binding = Api::<RoleBinding>::namespaced(client.clone(), ns)
        .get(release)
        .await?;
    let subject = &binding.subjects.unwrap_or_default()[0];
    assert_eq!(
        (subject.kind.as_str(), subject.name.as_str()),
        ("ServiceAccount", release)
    );
    Ok(())
}
