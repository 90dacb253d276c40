//! `ork init` as a new user runs it (issue 46.3): the folder it writes passes `ork validate`,
//! `ork test` and `ork conform` as written, with the generated Python service started on a free
//! loopback port or the generated bash script run by ork; the CRD it infers from a sample CR
//! types each field, and the API server accepts it and keeps every field of the sample; a
//! folder with something in it is never written over. Only the last test needs the cluster.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams};
use ork_test_support::{TestNamespace, apply_yaml, client};
use serde_json::{Value, json};

const SAMPLE: &str = r#"apiVersion: platform.acme.io/v1alpha1
kind: Tenant
metadata:
  name: team-a
  uid: 0b5e-not-kept
spec:
  owner: ann@acme.io
  tier: gold
  replicas: 3
  ratio: 0.5
  enabled: true
  members:
    - {name: ann, role: admin}
    - {name: bob, role: view, weight: 2}
  quota: {cpu: "4", memory: 8Gi, pods: 20}
  labels: {}
  tags: []
  ports: [80, http]
  note: null
status:
  phase: old
"#;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ork-init-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home")).expect("temp dir");
    dir
}

/// `ork ARGS` in `cwd`, offline: no kubeconfig to be found.
fn ork(cwd: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(args)
        .current_dir(cwd)
        .env_remove("KUBECONFIG")
        .env("HOME", home)
        .output()
        .expect("ork runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A loopback port nothing listens on now.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The generated service, started as the README says (`python3 reconciler.py`, no PORT: its
/// own default); running once it says where it listens. Killed when dropped.
struct Service(Child);

impl Service {
    fn start(dir: &Path) -> Result<(Service, String)> {
        let mut child = Command::new("python3")
            .arg("reconciler.py")
            .current_dir(dir)
            .env_remove("PORT")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting python3 reconciler.py")?;
        let stdout = child.stdout.take().context("the service's stdout")?;
        let mut lines = BufReader::new(stdout);
        let mut first = String::new();
        lines.read_line(&mut first)?;
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
        Ok((Service(child), first))
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn yaml_file(path: &Path) -> Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(serde_saphyr::from_str(&text)?)
}

/// `ork validate`, `ork test` (its default test/cases.yaml) and `ork conform` in `dir`, each
/// succeeding with what a user reads as success.
fn validate_test_conform(dir: &Path, home: &Path, entry: &str) -> Result<()> {
    let validated = ork(dir, home, &["validate"]);
    ensure!(validated.status.success(), "validate: {}", text(&validated));
    ensure!(
        text(&validated).contains("valid (1 entry)"),
        "{}",
        text(&validated)
    );

    let tested = ork(dir, home, &["test"]);
    let said = text(&tested);
    ensure!(tested.status.success(), "test: {said}");
    ensure!(said.contains("2 passed, 0 failed"), "{said}");

    let conformed = ork(dir, home, &["conform", "--entry", entry]);
    let said = text(&conformed);
    ensure!(conformed.status.success(), "conform: {said}");
    for check in [
        "protocol: every field of the schema",
        "protocol: only the required fields",
        "idempotence",
        "unknown request fields",
        "large object",
        "determinism",
        "concurrency",
    ] {
        ensure!(said.contains(&format!("PASS {check}: ")), "{check}: {said}");
    }
    ensure!(said.contains(" 0 failed"), "{said}");
    Ok(())
}

#[test]
fn an_operator_made_from_a_sample_cr_validates_tests_and_conforms_with_its_python_service()
-> Result<()> {
    let work = temp("python");
    let home = work.join("home");
    std::fs::write(work.join("sample.yaml"), SAMPLE)?;
    let port = free_port()?;
    let made = ork(
        &work,
        &home,
        &[
            "init",
            "tenant",
            "--from-cr",
            "sample.yaml",
            "--port",
            &port.to_string(),
        ],
    );
    ensure!(made.status.success(), "{}", text(&made));
    let dir = work.join("tenant");
    for file in [
        "katalog.yaml",
        "crd.yaml",
        "cr.yaml",
        "reconciler.py",
        "test/cases.yaml",
        "README.md",
    ] {
        ensure!(
            dir.join(file).is_file(),
            "{file} was written: {}",
            text(&made)
        );
    }

    // The type is the sample's; each field of its spec has the sample's type.
    let katalog = yaml_file(&dir.join("katalog.yaml"))?;
    let entry = &katalog["spec"]["crds"]["tenant"];
    assert_eq!(
        entry["apiTypes"],
        json!({"group": "platform.acme.io", "version": "v1alpha1", "kind": "Tenant", "plural": "tenants"})
    );
    assert_eq!(
        entry["operatorBox"]["reconcile"]["remote"]["endpoint"],
        format!("http://127.0.0.1:{port}/reconcile")
    );
    let crd = yaml_file(&dir.join("crd.yaml"))?;
    assert_eq!(crd["metadata"]["name"], "tenants.platform.acme.io");
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["subresources"], json!({"status": {}}));
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    for (field, t) in [
        ("owner", "string"),
        ("replicas", "integer"),
        ("ratio", "number"),
        ("enabled", "boolean"),
        ("members", "array"),
        ("quota", "object"),
    ] {
        assert_eq!(spec[field]["type"], t, "spec.{field}");
    }
    let member = &spec["members"]["items"];
    assert_eq!(member["properties"]["weight"]["type"], "integer");
    assert_eq!(member["properties"]["role"]["type"], "string");
    assert_eq!(spec["quota"]["properties"]["pods"]["type"], "integer");
    assert_eq!(spec["labels"]["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(
        spec["tags"]["items"]["x-kubernetes-preserve-unknown-fields"],
        true
    );
    assert_eq!(spec["ports"]["items"]["x-kubernetes-int-or-string"], true);
    let cr = yaml_file(&dir.join("cr.yaml"))?;
    assert_eq!(
        cr["metadata"],
        json!({"name": "team-a"}),
        "no server fields"
    );

    let (_service, said) = Service::start(&dir)?;
    ensure!(
        said.contains(&format!("127.0.0.1:{port}")),
        "the service listens where the Katalog calls: {said:?}"
    );
    validate_test_conform(&dir, &home, "tenant")
}

#[test]
fn a_bash_operator_validates_tests_and_conforms_with_no_service_to_start() -> Result<()> {
    ensure!(
        Command::new("jq").arg("--version").output().is_ok(),
        "the bash skeleton needs jq"
    );
    let work = temp("bash");
    let home = work.join("home");
    let made = ork(
        &work,
        &home,
        &[
            "init",
            "web-app",
            "--lang",
            "bash",
            "--group",
            "demo.acme.io",
            "--dir",
            "op",
        ],
    );
    ensure!(made.status.success(), "{}", text(&made));
    let dir = work.join("op");
    let katalog = yaml_file(&dir.join("katalog.yaml"))?;
    let entry = &katalog["spec"]["crds"]["web-app"];
    assert_eq!(entry["apiTypes"]["kind"], "WebApp");
    assert_eq!(entry["apiTypes"]["plural"], "webapps");
    assert_eq!(
        entry["operatorBox"]["reconcile"]["remote"]["command"],
        json!(["./reconcile.sh"])
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.join("reconcile.sh"))?
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "the script is executable");
    validate_test_conform(&dir, &home, "web-app")
}

#[test]
fn init_writes_nothing_into_a_folder_that_is_not_empty() -> Result<()> {
    let work = temp("nonempty");
    let home = work.join("home");
    let dir = work.join("mine");
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("katalog.yaml"), "my own work\n")?;
    let refused = ork(&work, &home, &["init", "mine"]);
    let said = text(&refused);
    ensure!(!refused.status.success(), "{said}");
    ensure!(said.contains("exists and is not empty"), "{said}");
    assert_eq!(
        std::fs::read_to_string(dir.join("katalog.yaml"))?,
        "my own work\n"
    );
    assert_eq!(std::fs::read_dir(&dir)?.count(), 1, "nothing added");
    Ok(())
}

/// The cluster's verdict on the inferred schema: the CRD is structural (the API server refuses
/// it otherwise), and the sample CR created under it comes back with every field, none pruned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inferred_crd_is_accepted_by_the_api_server_and_keeps_every_field_of_the_sample()
-> Result<()> {
    let admin = client().await?;
    let ns = TestNamespace::create(&admin).await?;
    let work = temp("cluster");
    let home = work.join("home");
    std::fs::write(work.join("sample.yaml"), SAMPLE)?;
    // A group of the test's own: the CRD is cluster-scoped.
    let group = format!("{}.acme.io", ns.name);
    let made = ork(
        &work,
        &home,
        &[
            "init",
            "tenant",
            "--from-cr",
            "sample.yaml",
            "--group",
            &group,
        ],
    );
    ensure!(made.status.success(), "{}", text(&made));
    let dir = work.join("tenant");
    let crd_name = format!("tenants.{group}");
    let outcome = async {
        apply_yaml(
            &admin,
            &std::fs::read_to_string(dir.join("crd.yaml"))?,
            &ns.name,
        )
        .await
        .context("the API server accepts the CRD")?;
        let created = apply_yaml(
            &admin,
            &std::fs::read_to_string(dir.join("cr.yaml"))?,
            &ns.name,
        )
        .await
        .context("the API server accepts the sample CR")?;
        let Some(stored) = created.first() else {
            bail!("no CR applied");
        };
        let sample: Value = serde_saphyr::from_str(SAMPLE)?;
        assert_eq!(
            stored.data["spec"], sample["spec"],
            "every field of the sample kept, none pruned or changed"
        );
        Ok(())
    }
    .await;
    let _ = Api::<CustomResourceDefinition>::all(admin.clone())
        .delete(&crd_name, &DeleteParams::default())
        .await;
    outcome
}
