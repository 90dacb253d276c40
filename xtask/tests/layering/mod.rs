//! The layering check: within each crate target, no module reaches back to itself through
//! `crate::`, `super::`, `self::` or child-module paths, directly or through others.
//!
//! Data flow: a package folder → its targets (`lib.rs`, `main.rs`, `bin/*`) → each target's
//! module tree (`modules`) → the paths each module names (`paths`) → the module each path lands
//! in, following `use` re-exports to where the item is defined → the circles of that graph.
//! Test items (`#[cfg(test)]`) are left out: tests may reach anywhere.

pub mod lex;
mod modules;
mod paths;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};

pub use modules::Read;
use modules::{Module, tree};
use paths::{UseLeaf, definitions, mentions, uses};

/// How deep re-exports are followed (`crate::X` → `pub use a::X` → `pub use b::X` …).
const MAX_REEXPORTS: usize = 8;

/// A package of the workspace: its name and folder.
#[derive(Debug, Clone)]
pub struct Package {
    pub name: String,
    pub dir: PathBuf,
}

/// A crate target: a package's library or one of its binaries, and its root file.
#[derive(Debug)]
pub struct Target {
    /// `ork-katalog (lib)`, `ork-test-support (bin ork-bench)`.
    pub name: String,
    pub root: PathBuf,
}

/// Modules that reach each other: `path` is one way round, the first module repeated last.
#[derive(Debug)]
pub struct Circle {
    pub target: String,
    pub path: Vec<String>,
    /// Every module of the strongly connected set, when it holds more than `path` shows.
    pub members: Vec<String>,
}

impl fmt::Display for Circle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.target, self.path.join(" → "))?;
        if self.members.len() + 1 > self.path.len() {
            write!(f, " (all of {} reach each other)", self.members.join(", "))?;
        }
        Ok(())
    }
}

/// The packages under `root` and `root/crates`: every folder with a `Cargo.toml` that has a
/// `[package]` and a `src/`. A new crate is found without editing the check.
pub fn packages(root: &Path) -> Vec<Package> {
    let mut out = Vec::new();
    for parent in [root.to_path_buf(), root.join("crates")] {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let dir = entry.path();
            let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
            if dir.join("src").is_dir()
                && let Some(name) = package_name(&manifest)
            {
                out.push(Package { name, dir });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The `name` of a manifest's `[package]` table.
fn package_name(manifest: &str) -> Option<String> {
    let table = &manifest[manifest.find("[package]")?..];
    let line = table.lines().find(|l| l.trim_start().starts_with("name"))?;
    let value = line.split_once('=')?.1.trim().trim_matches('"');
    Some(value.to_string())
}

/// The targets of a package: `src/lib.rs`, `src/main.rs`, `src/bin/*.rs`, `src/bin/*/main.rs`.
pub fn targets(package: &Package) -> Vec<Target> {
    let src = package.dir.join("src");
    let mut out = Vec::new();
    for (file, kind) in [("lib.rs", "lib"), ("main.rs", "bin")] {
        if src.join(file).is_file() {
            out.push(Target {
                name: format!("{} ({kind})", package.name),
                root: src.join(file),
            });
        }
    }
    let mut bins: Vec<PathBuf> = std::fs::read_dir(src.join("bin"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    bins.sort();
    for bin in bins {
        let root = if bin.is_dir() {
            bin.join("main.rs")
        } else {
            bin.clone()
        };
        if root.extension().is_some_and(|e| e == "rs") && root.is_file() {
            let stem = bin
                .file_stem()
                .expect("a file has a name")
                .to_string_lossy();
            out.push(Target {
                name: format!("{} (bin {stem})", package.name),
                root,
            });
        }
    }
    out
}

/// The circles among the modules of `target`, each named once.
pub fn circles(target: &Target, read: &Read) -> Vec<Circle> {
    let graph = Graph::new(tree(&target.root, read));
    let edges = graph.edges();
    let reach: Vec<BTreeSet<usize>> = (0..edges.len()).map(|m| reachable(&edges, m)).collect();
    let mut out = Vec::new();
    for m in 0..edges.len() {
        let set: Vec<usize> = (0..edges.len())
            .filter(|&n| reach[m].contains(&n) && reach[n].contains(&m))
            .collect();
        // Report each set once, from its first module.
        if set.len() < 2 || set[0] != m {
            continue;
        }
        let way = shortest_way_back(&edges, m, &set);
        let steps = way
            .windows(2)
            .map(|w| format!("{} (`{}`)", graph.name(w[1]), edges[w[0]][&w[1]]));
        out.push(Circle {
            target: target.name.clone(),
            path: std::iter::once(graph.name(m)).chain(steps).collect(),
            members: set.iter().map(|&n| graph.name(n)).collect(),
        });
    }
    out
}

/// A module's edges: the module reached → the first path (as written) that reaches it.
type Edges = BTreeMap<usize, String>;

/// The modules of one target with what each binds by `use` and defines.
struct Graph {
    modules: Vec<Module>,
    index: BTreeMap<Vec<String>, usize>,
    /// Per module: name → the absolute path it was imported from.
    bindings: Vec<BTreeMap<String, Vec<String>>>,
    /// Per module: the absolute paths of its glob imports.
    globs: Vec<Vec<Vec<String>>>,
    definitions: Vec<BTreeSet<String>>,
    /// Per module: its use leaves, and its code without them.
    code: Vec<(Vec<UseLeaf>, String)>,
}

impl Graph {
    fn new(modules: Vec<Module>) -> Graph {
        let index = modules
            .iter()
            .enumerate()
            .map(|(i, m)| (m.path.clone(), i))
            .collect();
        let code: Vec<_> = modules.iter().map(|m| uses(&m.code)).collect();
        let definitions = modules
            .iter()
            .map(|m| definitions(&m.code).into_iter().collect())
            .collect();
        let mut graph = Graph {
            bindings: vec![BTreeMap::new(); modules.len()],
            globs: vec![Vec::new(); modules.len()],
            modules,
            index,
            definitions,
            code,
        };
        // Twice, so a `use` that starts from a name another `use` bound resolves too.
        for _ in 0..2 {
            for m in 0..graph.modules.len() {
                for leaf in graph.code[m].0.clone() {
                    let Some(path) = graph.absolute(m, &leaf.path) else {
                        continue;
                    };
                    if leaf.glob {
                        if !graph.globs[m].contains(&path) {
                            graph.globs[m].push(path);
                        }
                    } else if let Some(name) = leaf.name {
                        graph.bindings[m].insert(name, path);
                    }
                }
            }
        }
        graph
    }

    fn name(&self, m: usize) -> String {
        match self.modules[m].path.as_slice() {
            [] => "crate root".to_string(),
            path => path.join("::"),
        }
    }

    /// The modules each module's code reaches, each with the first path that reaches it.
    fn edges(&self) -> Vec<Edges> {
        (0..self.modules.len())
            .map(|m| {
                let (leaves, rest) = &self.code[m];
                let starts = |word: &str| {
                    matches!(word, "crate" | "super" | "self")
                        || self.child(m, word).is_some()
                        || self.bindings[m].contains_key(word)
                };
                let named = leaves
                    .iter()
                    .map(|l| l.path.clone())
                    .chain(mentions(rest, &starts));
                let mut out = BTreeMap::new();
                for path in named {
                    let Some(absolute) = self.absolute(m, &path) else {
                        continue;
                    };
                    // The module defining the item, and each module whose `pub use` the path
                    // went through: a re-export is an import of the module re-exporting too
                    // (`crate::model::X`, re-exported by `model` from `model::x`, depends on
                    // `model`, which depends on everything it re-exports). Not the crate
                    // root's: it is the crate's public face, every module its child.
                    let mut through = Vec::new();
                    let n = self.landing(&absolute, 0, &mut through);
                    for n in std::iter::once(n).chain(through) {
                        if n != m {
                            out.entry(n).or_insert_with(|| path.join("::"));
                        }
                    }
                }
                out
            })
            .collect()
    }

    fn child(&self, m: usize, name: &str) -> Option<usize> {
        let mut path = self.modules[m].path.clone();
        path.push(name.to_string());
        self.index.get(&path).copied()
    }

    /// `path` as written in module `m`, from the crate root; `None` if it names another crate.
    fn absolute(&self, m: usize, path: &[String]) -> Option<Vec<String>> {
        let here = &self.modules[m].path;
        let (first, rest) = path.split_first()?;
        let mut out = match first.as_str() {
            "crate" => Vec::new(),
            "self" => here.clone(),
            "super" => {
                let mut base = here.clone();
                base.pop();
                let mut rest = rest;
                while let Some(("super", more)) = rest.split_first().map(|(s, r)| (s.as_str(), r)) {
                    base.pop();
                    rest = more;
                }
                base.extend(rest.iter().cloned());
                return Some(base);
            }
            _ if self.child(m, first).is_some() => {
                let mut base = here.clone();
                base.push(first.clone());
                base
            }
            _ => self.bindings[m].get(first)?.clone(),
        };
        out.extend(rest.iter().cloned());
        Some(out)
    }

    /// The module where the item at absolute `path` is defined: the deepest module the path
    /// walks through, then on through that module's `use` of the next name, if it is one.
    /// Each module whose `use` it went on through is added to `through`.
    fn landing(&self, path: &[String], depth: usize, through: &mut Vec<usize>) -> usize {
        let mut at = self.index[&Vec::new()];
        for (i, segment) in path.iter().enumerate() {
            if let Some(child) = self.child(at, segment) {
                at = child;
                continue;
            }
            if depth >= MAX_REEXPORTS {
                return at;
            }
            if let Some(from) = self.bindings[at].get(segment) {
                let mut next = from.clone();
                next.extend(path[i + 1..].iter().cloned());
                if !self.modules[at].path.is_empty() {
                    through.push(at);
                }
                return self.landing(&next, depth + 1, through);
            }
            if self.definitions[at].contains(segment) {
                return at;
            }
            for glob in &self.globs[at] {
                let mut via = Vec::new();
                let source = self.landing(glob, depth + 1, &mut via);
                if self.provides(source, segment) {
                    let mut next = self.modules[source].path.clone();
                    next.extend(path[i..].iter().cloned());
                    if !self.modules[at].path.is_empty() {
                        through.push(at);
                    }
                    through.extend(via);
                    return self.landing(&next, depth + 1, through);
                }
            }
            return at;
        }
        at
    }

    fn provides(&self, m: usize, name: &str) -> bool {
        self.child(m, name).is_some()
            || self.bindings[m].contains_key(name)
            || self.definitions[m].contains(name)
    }
}

/// The modules reachable from `start` by one edge or more.
fn reachable(edges: &[Edges], start: usize) -> BTreeSet<usize> {
    let mut seen = BTreeSet::new();
    let mut stack: Vec<usize> = edges[start].keys().copied().collect();
    while let Some(n) = stack.pop() {
        if seen.insert(n) {
            stack.extend(edges[n].keys().copied());
        }
    }
    seen
}

/// The shortest way from `start` back to itself inside `set`, `start` first and last.
fn shortest_way_back(edges: &[Edges], start: usize, set: &[usize]) -> Vec<usize> {
    let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(n) = queue.pop_front() {
        for &next in edges[n].keys() {
            if next == start {
                let mut way = vec![start, n];
                let mut at = n;
                while at != start {
                    at = came_from[&at];
                    way.push(at);
                }
                way.reverse();
                return way;
            }
            if set.contains(&next) && !came_from.contains_key(&next) {
                came_from.insert(next, n);
                queue.push_back(next);
            }
        }
    }
    unreachable!("every module of a strongly connected set reaches the others")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The circles of a crate held in memory: `files` are (path under `src/`, text).
    fn circles_of(files: &[(&str, &str)]) -> Vec<String> {
        let files: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(p, t)| (Path::new("fake/src").join(p), t.to_string()))
            .collect();
        let read = |p: &Path| files.get(p).cloned();
        let target = Target {
            name: "fake (lib)".to_string(),
            root: PathBuf::from("fake/src/lib.rs"),
        };
        circles(&target, &read)
            .iter()
            .map(Circle::to_string)
            .collect()
    }

    #[test]
    fn a_circle_through_a_reexport_is_named_with_its_crate() {
        let found = circles_of(&[
            ("lib.rs", "mod a;\nmod b;\npub use a::A;\n"),
            ("a.rs", "use crate::b::B;\npub struct A(B);\n"),
            ("b.rs", "pub struct B;\nfn f() -> crate::A { todo!() }\n"),
        ]);
        assert_eq!(
            found,
            vec!["fake (lib): a → b (`crate::b::B`) → a (`crate::A`)"]
        );
    }

    /// `b` names `crate::m::A`, which `m` re-exports from `m::a`: `b` depends on `m` too, and
    /// `m` (re-exporting `b`'s `B`) on `b`.
    #[test]
    fn a_path_through_a_module_s_reexport_depends_on_that_module() {
        let found = circles_of(&[
            (
                "lib.rs",
                "mod m;
mod b;
",
            ),
            (
                "m/mod.rs",
                "mod a;
pub use a::A;
pub use crate::b::B;
",
            ),
            (
                "m/a.rs",
                "pub struct A;
",
            ),
            (
                "b.rs",
                "pub struct B;
fn f() -> crate::m::A { todo!() }
",
            ),
        ]);
        assert_eq!(
            found,
            vec!["fake (lib): b → m (`crate::m::A`) → b (`crate::b::B`)"]
        );
    }

    #[test]
    fn a_circle_in_a_folder_through_super_super_and_a_child_name_is_found() {
        let found = circles_of(&[
            ("lib.rs", "mod low;\nmod top;\n"),
            ("low.rs", "pub fn f() { crate::top::deep::g() }\n"),
            ("top/mod.rs", "mod deep;\npub fn h() { deep::g() }\n"),
            ("top/deep.rs", "pub fn g() { super::super::low::f() }\n"),
        ]);
        assert_eq!(
            found,
            vec![
                "fake (lib): low → top::deep (`crate::top::deep::g`) → low (`super::super::low::f`)"
            ]
        );
    }

    #[test]
    fn one_way_imports_tests_comments_and_strings_make_no_circle() {
        let found = circles_of(&[
            ("lib.rs", "mod a;\nmod b;\npub use b::{B, helper as h};\n"),
            ("a.rs", "use crate::{b::B, h};\npub struct A(B);\n"),
            (
                "b.rs",
                "// crate::a::A\npub struct B;\npub fn helper() -> &'static str { \"crate::a\" }\n\
                 #[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n",
            ),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_module_file_beside_its_folder_and_path_attributes_are_followed() {
        let found = circles_of(&[
            (
                "lib.rs",
                "mod exec;\n#[path = \"other/place.rs\"]\nmod moved;\n",
            ),
            ("exec.rs", "mod child;\npub fn run() { child::go() }\n"),
            ("exec/child.rs", "pub fn go() { crate::moved::m() }\n"),
            ("other/place.rs", "pub fn m() { crate::exec::run() }\n"),
        ]);
        assert_eq!(
            found,
            vec![
                "fake (lib): exec → exec::child (`child::go`) → moved (`crate::moved::m`) → exec (`crate::exec::run`)"
            ]
        );
    }
}
