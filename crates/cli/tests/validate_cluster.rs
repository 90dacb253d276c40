//! `ork validate --cluster` against the local cluster, as a user without ork's permissions runs
//! it: a wrong plural named with the one meant, a CRD the cluster lacks, an exec program not to
//! be found, a template field the CRD schema lacks (a warning) and the permissions the identity
//! lacks. The identity is a ServiceAccount of a namespace of the test's own (`conform-…`),
//! deleted at the end; nothing cluster-wide is created.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DeleteParams, PostParams};
use ork_test_support::{client, kubeconfig_with_token, service_account_token};

/// A namespace named `conform-…`, deleted when dropped.
struct OwnNamespace {
    name: String,
    api: Api<Namespace>,
}

impl OwnNamespace {
    async fn create(api: Api<Namespace>) -> Result<OwnNamespace> {
        let name = format!("conform-validate-{}", std::process::id());
        let ns: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}}))?;
        api.create(&PostParams::default(), &ns).await?;
        Ok(OwnNamespace { name, api })
    }

    async fn delete(self) {
        let _ = self
            .api
            .delete(&self.name, &DeleteParams::background())
            .await;
    }
}

#[tokio::test]
async fn the_cluster_refutes_a_plural_a_crd_an_exec_program_and_permissions_and_warns_of_a_field()
-> Result<()> {
    let admin = client().await?;
    let ns = OwnNamespace::create(Api::all(admin.clone())).await?;
    let outcome = check(&admin, &ns.name).await;
    ns.delete().await;
    outcome
}

async fn check(admin: &kube::Client, namespace: &str) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("ork-validate-cluster-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    // The namespace's default ServiceAccount: allowed discovery and nothing else.
    let token = service_account_token(admin, namespace, "default").await?;
    let kubeconfig = dir.join("kubeconfig");
    kubeconfig_with_token(&token, &kubeconfig)?;
    let crd = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/faulty-service/crd.yaml");
    let katalog = dir.join("katalog.yaml");
    let text = format!(
        r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: cluster-checks}}
spec:
  crds:
    gadget:
      crdFile: {crd}
      operatorBox:
        reconcile:
          default: false
          remote:
            endpoint: "http://127.0.0.1:8025/reconcile"
            args: {{size: "{{{{ .spec.sise }}}}"}}
            managedResources:
              - {{group: apps, version: v1, plural: deployment}}
              - {{group: "", version: v1, plural: configmaps, kind: ConfigMap}}
    widget:
      apiTypes: {{group: conform.ork.dev, version: v1, kind: Widget, plural: widgets}}
      operatorBox:
        reconcile:
          default: false
          remote:
            command: ["ork-conform-no-such-program"]
            managedResources:
              - {{group: "", version: v1, plural: configmaps, kind: ConfigMap}}
"#,
        crd = crd.display()
    );
    std::fs::write(&katalog, &text)?;
    let out = Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(["validate", "-k", &katalog.to_string_lossy(), "--cluster"])
        .args(["--kubeconfig", &kubeconfig.to_string_lossy()])
        .output()?;
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "the cluster's problems fail: {shown}"
    );
    let line_of = |needle: &str| text.lines().position(|l| l.contains(needle)).map(|l| l + 1);
    let file = katalog.display();
    assert!(
        shown.contains(&format!(
            "{file}:{}: spec.crds.gadget.operatorBox.reconcile.remote.managedResources[0].plural: group `apps` has no resource `deployment` on this cluster\n    hint: did you mean `deployments`?",
            line_of("plural: deployment}").unwrap_or_default()
        )),
        "{shown}"
    );
    assert!(
        shown.contains(
            "spec.crds.widget.apiTypes: the cluster serves no widgets.conform.ork.dev: its CRD is not installed"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("warning: ")
            && shown.contains("spec.crds.widget.operatorBox.reconcile.remote.command: the exec program `ork-conform-no-such-program` is not in PATH here"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "warning: {file}:{}: spec.crds.gadget.operatorBox.reconcile.remote.args.size: \"{{{{ .spec.sise }}}}\" reads .spec.sise, which the CRD's schema does not have: it renders empty\n    hint: did you mean .spec.size?",
            line_of("sise").unwrap_or_default()
        )),
        "{shown}"
    );
    assert!(
        shown.contains("the kubeconfig's identity lacks")
            && shown.contains("watch conform.ork.dev/gadgets")
            && shown.contains("ork generate rbac -k"),
        "{shown}"
    );
    assert!(shown.contains("but 3 problems with the cluster"), "{shown}");
    Ok(())
}
