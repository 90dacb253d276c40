//! Every crate of the workspace depends on itself one way: no module reaches, directly or
//! through others, back to itself. Read from the sources, so a new circle, or a new crate with
//! one, fails `cargo test`.

mod layering;

use std::path::Path;

#[test]
fn no_module_of_any_crate_reaches_back_to_itself() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root");
    let packages = layering::packages(root);
    // The check must see the workspace, not an empty folder.
    for expected in ["xtask", "ork-katalog", "ork-kube"] {
        assert!(
            packages.iter().any(|p| p.name == expected),
            "package {expected} not found among {packages:?}"
        );
    }
    let read = |p: &Path| std::fs::read_to_string(p).ok();
    let circles: Vec<String> = packages
        .iter()
        .flat_map(layering::targets)
        .flat_map(|target| layering::circles(&target, &read))
        .map(|circle| circle.to_string())
        .collect();
    assert!(
        circles.is_empty(),
        "import circles (move the shared types down to the module both use):\n{}",
        circles.join("\n")
    );
}
