//! `dependsOn`: each dependency is another entry, and no entry waits on itself through others.

use std::collections::BTreeMap;

use super::findings::Findings;
use crate::model::{CrdEntry, Katalog};

/// The entry's own dependencies: not itself, and entries of this Katalog.
pub(super) fn check_depends_on(
    f: &mut Findings,
    katalog: &Katalog,
    name: &str,
    p: &str,
    entry: &CrdEntry,
) {
    for (dep, _) in entry.depends_on.entries() {
        if dep == name {
            f.add(
                format!("{p}.dependsOn"),
                "an entry cannot depend on itself",
                None,
            );
        } else if !katalog.spec.crds.contains_key(&dep) {
            let hint = f.entry_hint(katalog, &dep);
            f.add(
                format!("{p}.dependsOn"),
                format!("dependsOn names \"{dep}\", which is not an entry of this Katalog"),
                hint.as_deref(),
            );
        }
    }
}

/// Every entry on a dependency cycle (itself included), in name order: one pass over the
/// graph, however many entries and dependencies.
pub(super) fn check_dependency_cycles(f: &mut Findings, katalog: &Katalog) {
    let names: Vec<&str> = katalog.spec.crds.keys().map(String::as_str).collect();
    let index: BTreeMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let edges: Vec<Vec<usize>> = katalog
        .spec
        .crds
        .values()
        .map(|e| {
            e.depends_on
                .entries()
                .into_iter()
                .filter_map(|(d, _)| index.get(d.as_str()).copied())
                .collect()
        })
        .collect();
    for (name, cyclic) in names.iter().zip(on_a_cycle(&edges)) {
        if cyclic {
            f.add(
                format!("spec.crds.{name}.dependsOn"),
                format!("dependency cycle through \"{name}\""),
                None,
            );
        }
    }
}

/// For each node of a graph (its edges by node index), whether it lies on a cycle: Tarjan's
/// strongly connected components, without recursion.
fn on_a_cycle(edges: &[Vec<usize>]) -> Vec<bool> {
    const UNSEEN: usize = usize::MAX;
    let n = edges.len();
    let mut order = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut cyclic = vec![false; n];
    let mut next = 0;
    for root in 0..n {
        if order[root] != UNSEEN {
            continue;
        }
        // (node, how many of its edges were followed)
        let mut work = vec![(root, 0)];
        order[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&(v, followed)) = work.last() {
            if let Some(&w) = edges[v].get(followed) {
                if let Some(top) = work.last_mut() {
                    top.1 += 1;
                }
                if order[w] == UNSEEN {
                    order[w] = next;
                    low[w] = next;
                    next += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(order[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == order[v] {
                let mut component = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 || edges[v].contains(&v) {
                    for w in component {
                        cyclic[w] = true;
                    }
                }
            }
        }
    }
    cyclic
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_on_a_cycle_are_found_and_nodes_leading_to_one_are_not() {
        // 0 → 1 → 2 → 0 is a cycle; 3 leads into it; 4 depends on itself; 5 → 6 is a line.
        let edges = vec![vec![1], vec![2], vec![0], vec![0], vec![4], vec![6], vec![]];
        assert_eq!(
            on_a_cycle(&edges),
            [true, true, true, false, true, false, false]
        );
    }

    #[test]
    fn a_long_chain_and_a_long_ring_take_one_pass() {
        let n = 100_000;
        let chain: Vec<Vec<usize>> = (0..n)
            .map(|i| vec![i + 1].into_iter().filter(|j| *j < n).collect())
            .collect();
        assert!(on_a_cycle(&chain).iter().all(|c| !c));
        let ring: Vec<Vec<usize>> = (0..n).map(|i| vec![(i + 1) % n]).collect();
        assert!(on_a_cycle(&ring).iter().all(|c| *c));
    }
}
