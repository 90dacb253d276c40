//! The local cluster is real: CRDs, server-side apply and watches work against it.

use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::core::{DynamicObject, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};
use ork_test_support::{TestNamespace, apply_yaml, client, field_managers, resolve};

const CRD: &str = include_str!("../../../examples/webapp/crd.yaml");
const CR: &str = include_str!("../../../examples/webapp/cr.yaml");

#[tokio::test]
async fn crd_established_cr_applied_and_seen_by_a_watcher() -> anyhow::Result<()> {
    let client = client().await?;
    let ns = TestNamespace::create(&client).await?;
    apply_yaml(&client, CRD, &ns.name).await?;
    let gvk = GroupVersionKind::gvk("demo.ork.dev", "v1", "WebApp");
    let (ar, _) = resolve(&client, &gvk).await?;
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns.name, &ar);

    let mut seen = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    apply_yaml(&client, CR, &ns.name).await?;
    let obj = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(ev) = seen.next().await {
            if let Ok(o) = ev
                && o.metadata.name.as_deref() == Some("hello")
            {
                return Some(o);
            }
        }
        None
    })
    .await?
    .expect("the watcher saw the CR");
    assert_eq!(obj.data["spec"]["image"], "nginx:1.27");
    let managers = field_managers(&obj.metadata);
    assert!(managers.contains(&"ork-test".to_string()), "{managers:?}");
    Ok(())
}

/// The suite runs on a Kubernetes ork supports (SPEC §13: 1.33 and newer), and the one
/// `cargo xtask test --version` asked for when it says (`ORK_EXPECT_KUBERNETES`).
#[tokio::test]
async fn the_cluster_is_a_supported_kubernetes() -> anyhow::Result<()> {
    let info = client().await?.apiserver_version().await?;
    let minor: u32 = info.minor.trim_end_matches('+').parse()?;
    assert_eq!(info.major, "1", "{info:?}");
    assert!(
        minor >= 33,
        "Kubernetes {} is older than ork supports",
        info.git_version
    );
    if let Ok(expected) = std::env::var("ORK_EXPECT_KUBERNETES") {
        assert_eq!(info.git_version, format!("v{expected}"));
    }
    Ok(())
}
