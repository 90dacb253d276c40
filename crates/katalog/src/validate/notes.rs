//! `notes.functions`: names, shadowing, the functions each note calls, and note cycles.

use std::collections::{BTreeMap, BTreeSet};

use super::findings::{Findings, Scope};
use super::functions::check_functions;
use crate::model::Katalog;
use crate::sentinel::Sentinel;
use crate::template::{BUILTIN_FUNCTIONS, Template};

/// Checks `notes.functions`; returns the note names for the template checks.
pub(super) fn check_notes(f: &mut Findings, k: &Katalog) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut calls: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (i, note) in k.notes.functions.iter().enumerate() {
        let p = format!("notes.functions[{i}]");
        if !is_identifier(&note.name) {
            f.add(
                format!("{p}.name"),
                format!("note name \"{}\" is not an identifier", note.name),
                Some("use letters, digits and _ (e.g. reconcilerEndpoint)"),
            );
            continue;
        }
        check_note_name(f, &p, &note.name, note.shadow);
        if !names.insert(note.name.clone()) {
            f.add(
                format!("{p}.name"),
                format!("note \"{}\" is declared twice", note.name),
                None,
            );
        }
        if let Ok(t) = Template::parse(&note.expression) {
            calls.insert(note.name.clone(), t.functions());
        }
    }
    check_note_calls(f, k, &names);
    check_note_cycles(f, k, &calls);
    names
}

/// A note may not take a sentinel's name, nor a built-in's without `shadow: true`.
fn check_note_name(f: &mut Findings, p: &str, name: &str, shadow: bool) {
    if Sentinel::from_name(name).is_some() {
        f.add(
            format!("{p}.name"),
            format!("note \"{name}\" has the name of a sentinel"),
            Some("rename the note"),
        );
    } else if BUILTIN_FUNCTIONS.contains(&name) && !shadow {
        f.add(
            format!("{p}.name"),
            format!("note \"{name}\" has the name of a built-in function"),
            Some("rename it, or add `shadow: true` to replace the built-in"),
        );
    }
}

/// Every function a note's expression calls exists (sentinels are resolved by the caller).
fn check_note_calls(f: &mut Findings, k: &Katalog, names: &BTreeSet<String>) {
    let declared = BTreeSet::new();
    let scope = Scope {
        notes: names,
        declared: &declared,
        sentinels: true,
    };
    for (i, note) in k.notes.functions.iter().enumerate() {
        if let Ok(t) = Template::parse(&note.expression) {
            check_functions(
                f,
                &format!("notes.functions[{i}].expression"),
                &t,
                &scope,
                true,
            );
        }
    }
}

fn check_note_cycles(f: &mut Findings, k: &Katalog, calls: &BTreeMap<String, Vec<String>>) {
    for (i, note) in k.notes.functions.iter().enumerate() {
        if let Some(through) = cycle_from(&note.name, calls) {
            f.add(
                format!("notes.functions[{i}].expression"),
                format!("note \"{}\" calls itself{through}", note.name),
                Some("notes may call each other, but not in a circle"),
            );
        }
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// `Some(" through a, b")` when `start` reaches itself through note calls.
fn cycle_from(start: &str, calls: &BTreeMap<String, Vec<String>>) -> Option<String> {
    let mut stack: Vec<(String, Vec<String>)> = vec![(start.to_string(), Vec::new())];
    let mut seen = BTreeSet::new();
    while let Some((name, path)) = stack.pop() {
        for next in calls.get(&name).into_iter().flatten() {
            if next == start {
                return Some(if path.is_empty() {
                    String::new()
                } else {
                    format!(" through {}", path.join(", "))
                });
            }
            if calls.contains_key(next) && seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.clone());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}
