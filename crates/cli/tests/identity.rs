//! Running ork as the identity its generated RBAC binds (issue 46.2), against the local cluster:
//! the start-up refusal names that ServiceAccount and how to run as it, and following the
//! recipe (`ork generate rbac … | kubectl apply -f -`, then `ork generate kubeconfig
//! --service-account NS/ork`) yields a kubeconfig that is that ServiceAccount, may do what the
//! Katalog needs and no more. The example Katalog is copied with its name set to the test's own
//! namespace, so that the ClusterRole and ClusterRoleBinding (`ork-<Katalog name>`) are the
//! test's own; they are deleted at the end.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, PostParams};
use kube::{Client, Config};
use ork_test_support::{
    TestNamespace, apply_yaml, client, kubeconfig_path, kubeconfig_with_token,
    service_account_token,
};

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// `ork ARGS` with the admin's kubeconfig unless `kubeconfig` says otherwise, ork's namespace
/// `home`.
fn ork(args: &[&str], home: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(args)
        .env("KUBECONFIG", kubeconfig_path())
        .env("ORK_NAMESPACE", home)
        .output()
        .expect("ork runs")
}

use common::delete_cluster_rbac;
use common::output_text as text;

/// The webapp example's Katalog named `name`, in `dir`.
fn example_katalog(dir: &Path, name: &str) -> Result<PathBuf> {
    let text = std::fs::read_to_string(examples().join("webapp/katalog.yaml"))?;
    ensure!(
        text.contains("\n  name: demo\n"),
        "the example is named demo"
    );
    let path = dir.join("katalog.yaml");
    std::fs::write(
        &path,
        text.replace("\n  name: demo\n", &format!("\n  name: {name}\n")),
    )?;
    Ok(path)
}

/// A client that authenticates as the kubeconfig at `path` says.
async fn client_from(path: &Path) -> Result<Client> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(Client::try_from(config)?)
}

/// Whether the client's identity may `verb` `group/resource` (in `namespace`, or in every
/// namespace), as `kubectl auth can-i` asks it.
async fn can_i(
    client: &Client,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
) -> Result<bool> {
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                group: Some(group.into()),
                resource: Some(resource.into()),
                namespace: namespace.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SelfSubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.context("a review has a status")?.allowed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generated_kubeconfig_is_the_service_account_the_generated_rbac_binds() -> Result<()> {
    let admin = client().await?;
    let home = TestNamespace::create(&admin).await?;
    let dir = std::env::temp_dir().join(format!("ork-identity-{}", home.name));
    std::fs::create_dir_all(&dir)?;
    let katalog = example_katalog(&dir, &home.name)?;
    let katalog_arg = katalog.to_string_lossy().to_string();
    let cluster_name = format!("ork-{}", home.name);
    let result = follow_the_recipe(&admin, &home.name, &dir, &katalog_arg, &cluster_name).await;
    delete_cluster_rbac(&admin, &cluster_name).await;
    result
}

async fn follow_the_recipe(
    admin: &Client,
    home: &str,
    dir: &Path,
    katalog: &str,
    cluster_name: &str,
) -> Result<()> {
    apply_yaml(admin, common::CRD, home).await?;

    // As a user without the permissions (the namespace's default ServiceAccount): ork refuses
    // to start and says which identity the RBAC it suggests binds, and how to run as it.
    let token = service_account_token(admin, home, "default").await?;
    let bare = dir.join("default.kubeconfig");
    kubeconfig_with_token(&token, &bare)?;
    let refused = ork(
        &[
            "run",
            "-k",
            katalog,
            "--kubeconfig",
            &bare.to_string_lossy(),
            "--http-addr",
            "none",
            "--probe-addr",
            "none",
        ],
        home,
    );
    let said = text(&refused);
    ensure!(
        !refused.status.success(),
        "ork started without permissions:\n{said}"
    );
    ensure!(said.contains("ork lacks"), "{said}");
    for part in [
        format!("ork generate rbac -k {katalog} --namespace {home}"),
        format!("that RBAC binds ServiceAccount {home}/ork"),
        format!("ork generate kubeconfig --service-account {home}/ork -o ork-sa.kubeconfig"),
        format!("ORK_NAMESPACE={home} ork run -k {katalog} --kubeconfig ork-sa.kubeconfig"),
    ] {
        ensure!(said.contains(&part), "the hint lacks {part:?}:\n{said}");
    }

    // The recipe: the RBAC applied, then a kubeconfig for the ServiceAccount it binds.
    let rbac = ork(
        &["generate", "rbac", "-k", katalog, "--namespace", home],
        home,
    );
    ensure!(rbac.status.success(), "{}", text(&rbac));
    apply_yaml(admin, &String::from_utf8(rbac.stdout)?, home).await?;
    Api::<ServiceAccount>::namespaced(admin.clone(), home)
        .get("ork")
        .await
        .context("the ServiceAccount was applied")?;
    let binding = Api::<ClusterRoleBinding>::all(admin.clone())
        .get(cluster_name)
        .await
        .context("the ClusterRoleBinding was applied")?;
    let subject = &binding.subjects.unwrap_or_default()[0];
    assert_eq!(
        (
            subject.kind.as_str(),
            subject.name.as_str(),
            subject.namespace.as_deref()
        ),
        ("ServiceAccount", "ork", Some(home))
    );

    let file = dir.join("ork-sa.kubeconfig");
    let made = ork(
        &[
            "generate",
            "kubeconfig",
            "--service-account",
            &format!("{home}/ork"),
            "--duration",
            "10m",
            "-o",
            &file.to_string_lossy(),
        ],
        home,
    );
    let said = text(&made);
    ensure!(made.status.success(), "{said}");
    let mode = std::fs::metadata(&file)?.permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the kubeconfig holds a token: owner only");
    let written: serde_json::Value = serde_saphyr::from_str(&std::fs::read_to_string(&file)?)?;
    let token = written["users"][0]["user"]["token"]
        .as_str()
        .context("a token in the kubeconfig")?;
    ensure!(token.len() > 20, "a token: {token:?}");
    ensure!(!said.contains(token), "the token was printed:\n{said}");
    ensure!(
        said.contains(&format!("ServiceAccount {home}/ork")),
        "{said}"
    );

    // That kubeconfig is the ServiceAccount ...
    let sa = client_from(&file).await?;
    let me = Api::<SelfSubjectReview>::all(sa.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    let user = me
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default();
    assert_eq!(user, format!("system:serviceaccount:{home}:ork"));
    // ... which may do what the Katalog needs, cluster-wide as the entry watches every
    // namespace, and nothing beyond it.
    assert!(can_i(&sa, "list", "demo.ork.dev", "webapps", None).await?);
    assert!(can_i(&sa, "watch", "demo.ork.dev", "webapps", None).await?);
    assert!(can_i(&sa, "patch", "demo.ork.dev", "webapps/status", None).await?);
    assert!(can_i(&sa, "create", "apps", "deployments", Some("default")).await?);
    assert!(!can_i(&sa, "list", "", "secrets", None).await?);
    assert!(!can_i(&sa, "get", "", "secrets", Some(home)).await?);
    assert!(!can_i(&sa, "create", "", "pods", Some(home)).await?);
    assert!(!can_i(&sa, "delete", "demo.ork.dev", "webapps", None).await?);

    // And ork's own start-up check, run as it, finds nothing missing.
    let checked = ork(
        &[
            "validate",
            "-k",
            katalog,
            "--cluster",
            "--kubeconfig",
            &file.to_string_lossy(),
        ],
        home,
    );
    let said = text(&checked);
    ensure!(!said.contains("lacks"), "{said}");
    ensure!(checked.status.success(), "{said}");
    Ok(())
}
