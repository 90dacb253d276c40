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

/// Shared mutable state outside the one task that owns it, in the crates ork runs: each lock
/// and static atomic left, by file, with why it stays. A new one fails here until it is listed
/// with its reason (or, better, becomes an input of its owner's loop); one removed fails too,
/// so the list only shrinks.
const LOCKS: &[(&str, usize, &str)] = &[
    (
        "crates/cli/src/e2e/cluster.rs",
        1,
        "the E2E runner's discovery cache, filled on first use by concurrent expectations",
    ),
    (
        "crates/cli/src/e2e/run.rs",
        1,
        "a counter naming inline manifests uniquely within the run",
    ),
    (
        "crates/kube/src/packed.rs",
        1,
        "the compression dictionary a packer trains once and every watch of the kind shares",
    ),
    (
        "crates/kube/src/runtime.rs",
        1,
        "the entries a Katalog reload replaces, read by the HTTP endpoints",
    ),
    (
        "crates/kube/src/simulate/memory.rs",
        1,
        "`ork simulate`'s in-memory cluster, written by reconciles it drives one at a time",
    ),
    (
        "crates/kube/src/diff/rehearsal.rs",
        1,
        "one CR's `ork diff` journal of the dry-run writes its reconcile made, read once at its end",
    ),
    (
        "crates/kube/src/process.rs",
        2,
        "the entries whose first list is done, for the process's readiness; the admitter of \
         each entry, added as entries start and read by every AdmissionReview the webhook serves",
    ),
    (
        "crates/kube/src/webhook.rs",
        1,
        "the serving certificate, swapped by its renewal task and read by rustls' synchronous \
         certificate resolver on each TLS handshake",
    ),
    (
        "crates/kube/src/auth.rs",
        2,
        "a credential and a TLS transport, replaced by their Secret's watch, read per call",
    ),
    (
        "crates/kube/src/cache.rs",
        2,
        "a watch's cache: one writer (its entry loop), read by reconciles and the inspector",
    ),
    (
        "crates/kube/src/registry.rs",
        1,
        "each entry's published view, for `observe.cross` reads of other entries",
    ),
    (
        "crates/kube/src/access.rs",
        1,
        "the inspector's memo of the API server's access answers, shared by its requests",
    ),
    (
        "crates/kube/src/related.rs",
        1,
        "a customize hook's related rules, written by reconciles, read by the related watch",
    ),
    (
        "crates/kube/src/shard_set.rs",
        1,
        "the shards this replica holds, written by the shard protocol, read by every entry",
    ),
    (
        "crates/kube/src/wake.rs",
        2,
        "reconciles in flight, read by the runtime's park hook, which has no context to be given",
    ),
    (
        "crates/kube/src/index/mod.rs",
        1,
        "the namespace interner every entry's index shares",
    ),
    (
        "crates/kube/src/ports/cluster.rs",
        1,
        "discovery answers for related types, filled by concurrent reconciles",
    ),
    (
        "crates/kube/src/ports/events.rs",
        1,
        "the event series per object and reason, shared by the writers of events",
    ),
    (
        "crates/kube/src/ports/transport.rs",
        1,
        "an entry's call rate limit, taken by every concurrent reconcile",
    ),
    (
        "crates/kube/src/controller/lane.rs",
        1,
        "the lane's queue of CR writes, filled by the entry loop, drained by the lane task",
    ),
];

/// The crates whose code runs in ork (not its test and bench tooling).
const RUNTIME_CRATES: &[&str] = &["cli", "engine", "katalog", "kube", "protocol", "remote"];

/// Locks and static atomics declared in `code` (blanked, tests removed): a `Mutex<` or
/// `RwLock<` type, or a `static` whose type is an atomic.
fn locks_in(code: &str) -> usize {
    let word_at = |i: usize, word: &str| {
        code[i..].starts_with(word)
            && (i == 0 || !layering::lex::is_ident_byte(code.as_bytes()[i - 1]))
    };
    let mut count = 0;
    for (i, _) in code.char_indices() {
        if word_at(i, "Mutex<") || word_at(i, "RwLock<") {
            count += 1;
        } else if word_at(i, "static ") {
            let line = code[i..].lines().next().unwrap_or_default();
            let ty = line.split_once(':').map(|(_, t)| t).unwrap_or_default();
            if ty.contains("Atomic") && !ty.contains("Mutex<") && !ty.contains("RwLock<") {
                count += 1;
            }
        }
    }
    count
}

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The locks counted in each runtime file, by path from the workspace root.
fn locks_found(root: &Path) -> std::collections::BTreeMap<String, usize> {
    let mut files = Vec::new();
    for name in RUNTIME_CRATES {
        rust_files(&root.join("crates").join(name).join("src"), &mut files);
    }
    let mut found = std::collections::BTreeMap::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap_or(&file)
            .to_string_lossy()
            .to_string();
        // A file of tests only (`tests.rs`, `tests/…`) may share what it likes.
        if rel.ends_with("/tests.rs") || rel.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let code = layering::lex::without_tests(&layering::lex::blank(&text));
        let n = locks_in(&code);
        if n > 0 {
            found.insert(rel, n);
        }
    }
    found
}

#[test]
fn every_lock_and_static_atomic_of_the_runtime_is_listed_with_its_reason() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root");
    let found = locks_found(root);
    // The scan must see the code, not an empty folder.
    assert!(found.contains_key("crates/kube/src/cache.rs"), "{found:?}");
    let listed: std::collections::BTreeMap<String, usize> = LOCKS
        .iter()
        .map(|(file, n, reason)| {
            assert!(!reason.is_empty(), "{file}: say why it stays");
            (file.to_string(), *n)
        })
        .collect();
    let mut wrong = Vec::new();
    for (file, n) in &found {
        match listed.get(file) {
            Some(allowed) if allowed == n => {}
            Some(allowed) => wrong.push(format!("{file}: {n} locks, {allowed} listed")),
            None => wrong.push(format!(
                "{file}: {n} new lock(s): make it an input of its owner's loop, or list it in LOCKS with why"
            )),
        }
    }
    for (file, n) in &listed {
        if !found.contains_key(file) {
            wrong.push(format!("{file}: {n} listed, none left: drop it from LOCKS"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_lock_scan_counts_declarations_not_mentions() {
    let code = layering::lex::blank(
        "struct S { a: Mutex<u8>, b: std::sync::RwLock<u8> }\n\
         static N: AtomicUsize = AtomicUsize::new(0);\n\
         static NAME: &str = \"Mutex<\";\n\
         // a Mutex<T> in a comment\n\
         fn f(m: &MyMutex<u8>) {}\n",
    );
    assert_eq!(locks_in(&code), 3);
    let with_one_more = format!("{code}\nstruct T {{ c: Mutex<u8> }}\n");
    assert_eq!(locks_in(&with_one_more), 4, "an added lock is counted");
}
