//! Loads Katalogs kept outside the repository: every `katalog.yaml` under the folder named by
//! `ORK_VERIFY_KATALOGS` (e.g. Orkestra's remote-reconciler examples, fetched for a check and
//! never committed). Without the variable the test does nothing.

use std::path::{Path, PathBuf};

use ork_katalog::{Facts, load_file};
use serde_json::json;

fn katalogs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            katalogs(&path, out);
        } else if path.file_name().is_some_and(|n| n == "katalog.yaml") {
            out.push(path);
        }
    }
}

#[test]
fn katalogs_named_by_ork_verify_katalogs_load_and_validate() {
    let Some(root) = std::env::var_os("ORK_VERIFY_KATALOGS") else {
        return;
    };
    let mut found = Vec::new();
    katalogs(Path::new(&root), &mut found);
    assert!(!found.is_empty(), "no katalog.yaml under {root:?}");
    let mut failed = Vec::new();
    for path in &found {
        match load_file(path) {
            Err(problems) => {
                println!("FAIL {}\n{problems}", path.display());
                failed.push(path.clone());
            }
            Ok(k) => {
                println!("ok   {} ({} entries)", path.display(), k.spec.crds.len());
                for n in &k.notices {
                    println!("     note: {n}");
                }
                for (name, e) in &k.spec.crds {
                    let t = &e.api_types;
                    println!(
                        "     {name}: {}/{} {} ({}) namespaced={} allowed={:?}",
                        t.group,
                        t.version,
                        t.kind,
                        t.plural,
                        e.namespaced,
                        e.effective_allowed_namespaces()
                    );
                    if let Some(r) = &e.operator_box.reconcile.remote {
                        let cr = json!({"metadata": {"name": "sample", "namespace": "default"}, "spec": {}});
                        println!(
                            "     endpoint (inCluster={}): {:?}",
                            Facts::current().in_cluster,
                            r.render_endpoint(&cr)
                        );
                        println!("     args: {:?}", r.render_args(&cr));
                    }
                }
            }
        }
    }
    assert!(failed.is_empty(), "these Katalogs do not load: {failed:?}");
}
