//! `ork generate` output for the example Katalogs, as a reviewer would read it (snapshots), and
//! the RBAC as narrow as each entry (SPEC §6, §11).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// `ork ARGS -k FILE`: (success, stdout, stderr).
fn run(args: &[&str], katalog: &Path) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(args)
        .arg("-k")
        .arg(katalog)
        .output()
        .expect("ork runs");
    (
        out.status.success(),
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ork_on(args: &[&str], katalog: &Path) -> String {
    let (ok, stdout, stderr) = run(args, katalog);
    assert!(ok, "{stderr}");
    stdout
}

fn ork(args: &[&str]) -> String {
    ork_on(args, &examples().join("webapp/katalog.yaml"))
}

fn documents(yaml: &str) -> Vec<Value> {
    yaml.split("---\n")
        .filter(|d| !d.trim().is_empty())
        .map(|d| serde_saphyr::from_str(d).expect("YAML"))
        .collect()
}

fn find<'a>(docs: &'a [Value], kind: &str, namespace: Option<&str>) -> Option<&'a Value> {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["namespace"].as_str() == namespace)
}

/// The rules of `docs`' `kind` (ClusterRole or Role) in `namespace` that name `resource`.
fn rules_for<'a>(
    docs: &'a [Value],
    kind: &str,
    namespace: Option<&str>,
    resource: &str,
) -> Vec<&'a Value> {
    find(docs, kind, namespace)
        .and_then(|r| r["rules"].as_array())
        .into_iter()
        .flatten()
        .filter(|r| {
            r["resources"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == resource))
        })
        .collect()
}

/// A folder with `katalog.yaml` holding the webapp example with `entry` lines added to the
/// entry (6 spaces) and `remote` lines to the remote block (12 spaces).
fn katalog_dir(tag: &str, entry: &str, remote: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ork-generate-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let text = std::fs::read_to_string(examples().join("webapp/katalog.yaml"))
        .expect("example")
        .replace(
            "      description: A web application",
            &format!("{entry}      description: A web application"),
        )
        .replace(
            "            timeout: 10s\n",
            &format!("            timeout: 10s\n{remote}"),
        );
    std::fs::write(dir.join("katalog.yaml"), text).expect("write");
    dir
}

#[test]
fn rbac_for_the_example() {
    insta::assert_snapshot!(ork(&["generate", "rbac"]));
}

#[test]
fn bundle_for_the_example() {
    insta::assert_snapshot!(ork(&[
        "generate",
        "bundle",
        "--namespace",
        "platform",
        "--image",
        "ork:test"
    ]));
}

#[test]
fn bundle_for_the_orkestra_style_example() {
    insta::assert_snapshot!(ork_on(
        &["generate", "bundle", "--image", "ork:test"],
        &examples().join("orkestra-remote/katalog.yaml")
    ));
}

#[test]
fn output_is_deterministic() {
    assert_eq!(ork(&["generate", "bundle"]), ork(&["generate", "bundle"]));
}

#[test]
fn rbac_starts_with_ork_s_namespace_so_it_applies_to_an_empty_cluster() {
    let docs = documents(&ork(&["generate", "rbac", "--namespace", "ops"]));
    assert_eq!(docs[0]["kind"], "Namespace");
    assert_eq!(docs[0]["metadata"]["name"], "ops");
    let bundle = documents(&ork(&["generate", "bundle", "--namespace", "ops"]));
    assert_eq!(
        bundle.iter().filter(|d| d["kind"] == "Namespace").count(),
        1,
        "the bundle has it once"
    );
}

#[test]
fn an_entry_watching_one_namespace_gets_a_role_there_and_nothing_else_cluster_wide() {
    let dir = katalog_dir("team", "      namespace: team\n", "");
    let docs = documents(&ork_on(&["generate", "rbac"], &dir.join("katalog.yaml")));
    for resource in [
        "webapps",
        "webapps/status",
        "deployments",
        "services",
        "events",
    ] {
        assert!(
            rules_for(&docs, "ClusterRole", None, resource).is_empty(),
            "{resource} is not granted cluster-wide"
        );
        assert_eq!(
            rules_for(&docs, "Role", Some("team"), resource).len(),
            if resource == "events" { 2 } else { 1 },
            "{resource} is granted in team"
        );
    }
    let cluster_wide: Vec<&str> = find(&docs, "ClusterRole", None)
        .and_then(|r| r["rules"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|r| r["resources"][0].as_str())
        .collect();
    assert_eq!(
        cluster_wide,
        ["tokenreviews", "subjectaccessreviews"],
        "cluster-wide only what /katalog needs to authorize its readers"
    );
    let binding = find(&docs, "RoleBinding", Some("team")).expect("a RoleBinding in team");
    assert_eq!(binding["subjects"][0]["namespace"], "ork-system");
    assert_eq!(binding["roleRef"]["kind"], "Role");
    assert_eq!(
        rules_for(&docs, "Role", Some("ork-system"), "leases").len(),
        1,
        "the Lease stays in ork's namespace"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_templated_secret_name_is_refused_and_widens_no_rbac() {
    let dir = katalog_dir(
        "secret",
        "",
        "            auth: {secretRef: {name: \"{{ .metadata.name }}-token\", key: token, namespace: creds}}\n",
    );
    let (ok, stdout, stderr) = run(&["generate", "rbac"], &dir.join("katalog.yaml"));
    assert!(!ok && stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("cannot be a template"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_crd_file_is_granted_by_name_and_embedded_in_the_bundle_with_dev_files_off() {
    let katalog = examples().join("orkestra-remote/katalog.yaml");
    let docs = documents(&ork_on(&["generate", "bundle"], &katalog));
    let crd_rules = rules_for(&docs, "ClusterRole", None, "customresourcedefinitions");
    assert_eq!(crd_rules.len(), 1);
    assert_eq!(
        crd_rules[0]["resourceNames"],
        serde_json::json!(["webapps.migrate.ork.dev"])
    );
    let crd = find(&docs, "CustomResourceDefinition", None).expect("the CRD is in the bundle");
    assert_eq!(crd["metadata"]["name"], "webapps.migrate.ork.dev");
    let position = |kind: &str| docs.iter().position(|d| d["kind"] == kind);
    assert!(position("CustomResourceDefinition") < position("ServiceAccount"));

    let deployment = find(&docs, "Deployment", Some("ork-system")).expect("Deployment");
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    assert!(
        container["args"]
            .as_array()
            .expect("args")
            .iter()
            .any(|a| a == "--no-dev-files"),
        "setup and crFiles are not applied in the cluster"
    );
    // The Katalog loads in the pod: the files it names are mounted next to it; the dev files
    // only as placeholders (setup.yaml holds a Secret: it stays out of the ConfigMap).
    let config = find(&docs, "ConfigMap", Some("ork-system")).expect("ConfigMap");
    let items = deployment["spec"]["template"]["spec"]["volumes"][0]["configMap"]["items"]
        .as_array()
        .expect("items");
    let content = |path: &str| {
        let key = items
            .iter()
            .find(|i| i["path"] == path)
            .unwrap_or_else(|| panic!("{path} is mounted"))["key"]
            .as_str()
            .expect("key")
            .to_string();
        config["data"][&key].as_str().expect("data").to_string()
    };
    assert!(content("crd.yaml").contains("name: webapps.migrate.ork.dev"));
    assert!(content("katalog.yaml").contains("crdFile: crd.yaml"));
    assert!(
        !content("setup.yaml").contains("token"),
        "{}",
        content("setup.yaml")
    );
    assert!(!content("cr.yaml").contains("kind:"));
}

#[test]
fn a_child_type_only_discovery_can_name_is_refused_with_the_fix() {
    let dir = katalog_dir("discovery", "", "");
    let path = dir.join("katalog.yaml");
    let text = std::fs::read_to_string(&path).expect("read").replace(
        "              - {group: \"\", version: v1, plural: services, kind: Service}\n",
        "              - {group: \"\", version: v1, plural: services, kind: Service}\n              - {apiVersion: db.example.com/v1, kind: Database}\n",
    );
    std::fs::write(&path, text).expect("write");
    let (ok, _, stderr) = run(&["generate", "rbac"], &path);
    assert!(!ok);
    assert!(
        stderr.contains("managedResources[2]: the plural of db.example.com/Database is only known to the API server"),
        "{stderr}"
    );
    assert!(stderr.contains("hint: add `plural:`"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_file_outside_the_katalog_s_folder_cannot_be_bundled() {
    let dir = std::env::temp_dir().join(format!("ork-generate-outside-{}", std::process::id()));
    let inner = dir.join("k");
    std::fs::create_dir_all(&inner).expect("temp dir");
    std::fs::copy(examples().join("webapp/crd.yaml"), dir.join("crd.yaml")).expect("copy");
    std::fs::write(
        inner.join("katalog.yaml"),
        "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nspec:\n  crds:\n    web:\n      crdFile: ../crd.yaml\n      operatorBox:\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://127.0.0.1:1/r\"}\n",
    )
    .expect("write");
    let (ok, _, stderr) = run(&["generate", "bundle"], &inner.join("katalog.yaml"));
    assert!(!ok);
    assert!(stderr.contains("spec.crds.web.crdFile"), "{stderr}");
    assert!(
        stderr.contains("is outside the Katalog's folder"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn without_k_the_katalog_yaml_of_the_current_folder_is_used() {
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["generate", "rbac"])
        .current_dir(examples().join("webapp"))
        .output()
        .expect("ork runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).expect("utf-8"),
        ork(&["generate", "rbac"])
    );
}

#[test]
fn a_sharded_bundle_runs_replicas_with_shards_instead_of_one_leader() {
    let docs = documents(&ork(&[
        "generate",
        "bundle",
        "--shards",
        "9",
        "--replicas",
        "3",
    ]));
    let deployment = find(&docs, "Deployment", Some("ork-system")).expect("a Deployment");
    assert_eq!(deployment["spec"]["replicas"], 3);
    let args: Vec<&str> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(args.contains(&"--shards=9"), "{args:?}");
    assert!(!args.contains(&"--leader-elect"), "{args:?}");
    // The shard protocol lists its Leases.
    let lease_rules = rules_for(&docs, "Role", Some("ork-system"), "leases");
    assert!(
        lease_rules.iter().any(|r| r["verbs"]
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x == "list"))),
        "{lease_rules:?}"
    );
}

/// Finding L7 of issue 47: a controller named like a Katalog entry took over that entry's name
/// (its config, registry, metrics and authorization then referred to different types).
#[test]
fn a_controller_named_like_a_katalog_entry_is_refused() {
    let dir = std::env::temp_dir().join(format!("ork-generate-collision-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let controllers = dir.join("controllers.yaml");
    std::fs::write(
        &controllers,
        r#"apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata: {name: webapp}
spec:
  parentResource: {apiVersion: example.ork.dev/v1, resource: things}
  childResources: [{apiVersion: v1, resource: configmaps}]
  hooks: {sync: {webhook: {url: "http://127.0.0.1:1/sync"}}}
"#,
    )
    .expect("write");
    let katalog = examples().join("webapp/katalog.yaml");
    assert!(
        std::fs::read_to_string(&katalog)
            .expect("the example")
            .contains("\n    webapp:\n"),
        "the fixture's Katalog has an entry named webapp"
    );
    let (ok, _, stderr) = run(
        &[
            "generate",
            "rbac",
            "--controllers",
            controllers.to_str().expect("path"),
        ],
        &katalog,
    );
    assert!(!ok, "a collision must fail");
    assert!(stderr.contains("already named \"webapp\""), "{stderr}");
}

/// The names of the ClusterRole and ClusterRoleBinding in `docs`, the role the binding refers
/// to and the ServiceAccount it binds (`namespace/name`).
fn cluster_grant(docs: &[Value]) -> (String, String, String, String) {
    let role = find(docs, "ClusterRole", None).expect("a ClusterRole");
    let binding = find(docs, "ClusterRoleBinding", None).expect("a ClusterRoleBinding");
    let subject = &binding["subjects"][0];
    (
        role["metadata"]["name"].as_str().expect("name").to_string(),
        binding["metadata"]["name"]
            .as_str()
            .expect("name")
            .to_string(),
        binding["roleRef"]["name"]
            .as_str()
            .expect("name")
            .to_string(),
        format!(
            "{}/{}",
            subject["namespace"].as_str().expect("namespace"),
            subject["name"].as_str().expect("name")
        ),
    )
}

#[test]
fn two_katalogs_generated_with_the_defaults_get_cluster_roles_of_their_own() {
    let demo = documents(&ork(&["generate", "rbac"]));
    let remote = documents(&ork_on(
        &["generate", "rbac", "--namespace", "team-b"],
        &examples().join("orkestra-remote/katalog.yaml"),
    ));
    let (demo_role, demo_binding, demo_ref, demo_subject) = cluster_grant(&demo);
    let (remote_role, remote_binding, remote_ref, remote_subject) = cluster_grant(&remote);
    // Named after each Katalog's metadata.name (demo, webapp-remote): applying the second
    // cannot re-bind the first team's ClusterRole to the second team's ServiceAccount.
    assert_eq!(
        (demo_role.as_str(), demo_binding.as_str(), demo_ref.as_str()),
        ("ork-demo", "ork-demo", "ork-demo")
    );
    assert_eq!(
        (
            remote_role.as_str(),
            remote_binding.as_str(),
            remote_ref.as_str()
        ),
        (
            "ork-webapp-remote",
            "ork-webapp-remote",
            "ork-webapp-remote"
        )
    );
    // The namespaced objects keep the short name, in ork's namespace.
    assert_eq!(demo_subject, "ork-system/ork");
    assert_eq!(remote_subject, "team-b/ork");
    let account = find(&demo, "ServiceAccount", Some("ork-system")).expect("a ServiceAccount");
    assert_eq!(account["metadata"]["name"], "ork");
    let role = find(&demo, "Role", Some("ork-system")).expect("the Lease Role");
    assert_eq!(role["metadata"]["name"], "ork");
}

#[test]
fn a_name_given_names_the_cluster_scoped_objects_too() {
    let docs = documents(&ork(&["generate", "rbac", "--name", "team-a-ork"]));
    let (role, binding, role_ref, subject) = cluster_grant(&docs);
    assert_eq!(
        (role.as_str(), binding.as_str(), role_ref.as_str()),
        ("team-a-ork", "team-a-ork", "team-a-ork")
    );
    assert_eq!(subject, "ork-system/team-a-ork");
    let bundle = documents(&ork(&["generate", "bundle", "--name", "team-a-ork"]));
    assert_eq!(cluster_grant(&bundle).0, "team-a-ork");
}

/// Controllers alone need no Katalog (as `ork run --controllers`), and a controller's
/// `orkestra.orkspace.io/bind-roles` annotation is granted as `bind` on exactly those names.
#[test]
fn rbac_for_controllers_alone_needs_no_katalog_and_binds_the_named_roles_only() {
    let dir = std::env::temp_dir().join(format!("ork-generate-controllers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let controllers = dir.join("cluster-parent.yaml");
    std::fs::write(
        &controllers,
        r#"apiVersion: metacontroller.k8s.io/v1alpha1
kind: DecoratorController
metadata:
  name: cluster-parent
  annotations: {orkestra.orkspace.io/bind-roles: "ClusterRole/my-clusterrole"}
spec:
  resources: [{apiVersion: rbac.authorization.k8s.io/v1, resource: clusterroles}]
  attachments: [{apiVersion: rbac.authorization.k8s.io/v1, resource: rolebindings}]
  hooks: {sync: {webhook: {url: "http://127.0.0.1:1/sync"}}}
"#,
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .current_dir(&dir)
        .args(["generate", "rbac", "--controllers"])
        .arg(&controllers)
        .output()
        .expect("ork runs");
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs = documents(&stdout);
    let binds: Vec<&Value> = docs
        .iter()
        .flat_map(|d| d["rules"].as_array().into_iter().flatten())
        .filter(|r| {
            r["verbs"]
                .as_array()
                .is_some_and(|v| v.contains(&serde_json::json!("bind")))
        })
        .collect();
    assert_eq!(binds.len(), 1, "{binds:?}");
    assert_eq!(binds[0]["resources"], serde_json::json!(["clusterroles"]));
    assert_eq!(
        binds[0]["resourceNames"],
        serde_json::json!(["my-clusterrole"])
    );
}
