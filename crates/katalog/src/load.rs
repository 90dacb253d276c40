//! Reading a Katalog file: YAML → JSON tree → typed structs → semantic checks, collecting every
//! problem with its file, line and field path.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_path_to_error::Segment;

use crate::limits::{MAX_FILE_BYTES, MAX_NESTING};
use crate::lines::{LineIndex, split_documents};
use crate::model::{CrdEntry, Katalog, KatalogSpec, NotesBlock};
use crate::problem::{Problem, Problems};
use crate::resolve::resolve;
use crate::suggest::closest;
use crate::validate::{Finding, notices, validate};

/// Orkestra fields ork deliberately does not implement (refused wherever they appear), with
/// what to do instead.
pub const REFUSED_FIELDS: &[(&str, &str)] = &[
    (
        "onCreate",
        "Orkestra's generic reconciler; ork runs remote reconcilers: move this logic into the service",
    ),
    (
        "onReconcile",
        "Orkestra's generic reconciler; ork runs remote reconcilers: move this logic into the service",
    ),
    (
        "onDelete",
        "Orkestra's generic reconciler; use `remote.finalize: true` and answer finalize calls",
    ),
    (
        "hooks",
        "Go hooks of Orkestra's generic reconciler; move this logic into the remote service",
    ),
    (
        "constructor",
        "a compiled Go Reconcile(); ork runs remote reconcilers only",
    ),
    (
        "object",
        "typed mode needs Go types compiled into Orkestra; ork watches custom resources dynamically: remove it from apiTypes",
    ),
    (
        "objectList",
        "typed mode needs Go types compiled into Orkestra; ork watches custom resources dynamically: remove it from apiTypes",
    ),
    (
        "location",
        "typed mode needs Go types compiled into Orkestra; ork watches custom resources dynamically: remove it from apiTypes",
    ),
    (
        "alias",
        "typed mode needs Go types compiled into Orkestra; ork watches custom resources dynamically: remove it from apiTypes",
    ),
    (
        "apiPath",
        "typed mode needs Go types compiled into Orkestra; ork watches custom resources dynamically: remove it from apiTypes",
    ),
    (
        "imports",
        "ork reads one Katalog, not a Komposer's imports (Katalog files or Motifs): merge the imported Katalogs' entries into one file (spec.crds), and return what a Motif would add from the service's answer",
    ),
    (
        "motifs",
        "Motifs are not supported; inline the resources in the service's answer",
    ),
    (
        "include",
        "file includes are not supported; keep the block inline",
    ),
    (
        "normalize",
        "normalization belongs to the generic reconciler; the service sees the CR as stored",
    ),
    ("providers", "providers belong to the generic reconciler"),
    (
        "templates",
        "resource templates belong to the generic reconciler; return resources from the service",
    ),
    (
        "resources",
        "declarative resources belong to the generic reconciler; return them from the service",
    ),
    (
        "profile",
        "reconcile profiles are not supported; set workers/resync/queue directly",
    ),
    (
        "profiles",
        "reconcile profiles are not supported; set workers/resync/queue directly",
    ),
    (
        "autoscale",
        "worker autoscaling is not supported; set `workers`",
    ),
    (
        "cleanup",
        "runtime.cleanup is not supported; use remote.finalize for deletion logic",
    ),
    (
        "finalizers",
        "ork manages its own finalizer; use remote.finalize for deletion logic",
    ),
    ("rollback", "rollback belongs to the generic reconciler"),
    (
        "helm",
        "ork installs no Helm charts: install the chart before `ork run` (helm upgrade --install), and list what must be ready under `setup.wait`",
    ),
    (
        "rollBackOnError",
        "rollback belongs to the generic reconciler",
    ),
    (
        "deletionProtection",
        "deletion protection is not supported by ork",
    ),
    (
        "emit",
        "operatorBox.emit is not supported; return `status`, `conditions` and `events` from the service",
    ),
    (
        "admission",
        "Orkestra's entry-level admission block is not read: declare `remote.admission` (validate, mutate, path, timeout, failurePolicy), which asks the entry's own service",
    ),
    (
        "validation",
        "Orkestra's validation webhook is not read: declare `remote.admission` with `validate: true`; operatorBox.validation rules are checked before each call",
    ),
    (
        "mutation",
        "Orkestra's mutation webhook is not read: declare `remote.admission` with `mutate: true`, and answer a `patch` or the defaulted `object`",
    ),
    ("conversion", "conversion webhooks are not supported by ork"),
    ("webhooks", "webhooks are not supported by ork"),
    ("serve", "serve targets are not supported by ork"),
    ("gateway", "Orkestra's gateway is not supported by ork"),
    (
        "security",
        "Orkestra's security policies are not supported by ork",
    ),
    (
        "notification",
        "Orkestra's notifications are not supported by ork",
    ),
    (
        "lifecycle",
        "Orkestra's registry lifecycle block is not supported by ork",
    ),
    (
        "policy",
        "Orkestra's registry policy block is not supported by ork",
    ),
    (
        "publish",
        "Orkestra's registry publishing is not supported by ork",
    ),
    ("enrich", "enrichment is not supported; use observe.cross"),
    (
        "enrichAll",
        "enrichment is not supported; use observe.cross",
    ),
    (
        "crossAccess",
        "cross-read policies are not supported; every entry may read another through observe.cross",
    ),
    (
        "watch",
        "observe.watch is not supported; managed children are watched automatically",
    ),
    ("events", "observe.events is not supported"),
    ("external", "external gate calls are not supported"),
    (
        "eventAware",
        "event-aware gates are not supported; events for one object are coalesced",
    ),
    (
        "requeue",
        "declarative requeue is not supported; answer `result: requeue` with `requeueAfter`",
    ),
    (
        "maxDepth",
        "queue depth limits are not supported: ork's queue holds each object at most once",
    ),
    (
        "behaviour",
        "queue behaviour is not supported: ork's queue holds each object at most once",
    ),
    (
        "shared",
        "shared queues are not supported: every entry has its own queue",
    ),
    (
        "time",
        "time-window conditions are not supported (gates are deterministic); gate on object fields",
    ),
    (
        "dayOfWeek",
        "day-of-week conditions are not supported (gates are deterministic); gate on object fields",
    ),
    (
        "cron",
        "cron-window conditions are not supported (gates are deterministic); gate on object fields",
    ),
    ("source", "cross-binary metric sources are not supported"),
    (
        "ignoreStatusPatch",
        "not supported: ork writes status only when it changed",
    ),
    (
        "ignoreObservedGeneration",
        "not supported: ork always records observedGeneration",
    ),
    (
        "removeFinalizers",
        "not supported; ork removes its own finalizer after finalize succeeds",
    ),
];

/// Reads and validates a Katalog file (one or several YAML documents). Relative paths in it
/// (`crdFile`, `crFiles`, `setup`) are taken from the file's folder.
///
/// # Errors
/// Every problem found, each with file, line, field path and hint; nothing partial is returned.
pub fn load_file(path: &Path) -> Result<Katalog, Problems> {
    let whole = |message: String, hint: Option<String>| {
        Problems(vec![Problem {
            file: path.to_path_buf(),
            line: None,
            path: String::new(),
            message,
            hint,
        }])
    };
    let size = std::fs::metadata(path)
        .map_err(|e| whole(format!("cannot read file: {e}"), None))?
        .len();
    if size > MAX_FILE_BYTES {
        return Err(whole(too_large(size), None));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| whole(format!("cannot read file: {e}"), None))?;
    load_str(&text, path)
}

/// `findings` about the Katalog file `file` (checks made after loading it, such as `ork validate
/// --cluster`'s), each with the line of its field.
pub fn locate(file: &Path, findings: Vec<Finding>) -> Vec<Problem> {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    let indexes: Vec<LineIndex> = split_documents(&text)
        .into_iter()
        .map(|(doc, first)| LineIndex::build(doc, first))
        .collect();
    findings
        .into_iter()
        .map(|f| {
            // The document that declares the field's entry (`spec.crds.NAME`), else the first.
            let entry: String = f.path.split('.').take(3).collect::<Vec<_>>().join(".");
            let index = indexes
                .iter()
                .find(|i| i.has(&entry))
                .or_else(|| indexes.first());
            Problem {
                file: file.to_path_buf(),
                line: index.and_then(|i| i.line_of(&f.path)),
                path: f.path,
                message: f.message,
                hint: f.hint,
            }
        })
        .collect()
}

fn too_large(size: u64) -> String {
    format!(
        "the file is {size} bytes; a Katalog may be at most {} MiB",
        MAX_FILE_BYTES / (1024 * 1024)
    )
}

/// Parses Katalog text; `file` names it in messages and its folder anchors relative paths.
///
/// # Errors
/// As [`load_file`].
pub fn load_str(text: &str, file: &Path) -> Result<Katalog, Problems> {
    let problem = |line: Option<usize>, message: String, hint: Option<String>| Problem {
        file: file.to_path_buf(),
        line,
        path: String::new(),
        message,
        hint,
    };
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(Problems(vec![problem(
            None,
            too_large(text.len() as u64),
            None,
        )]));
    }
    if let Some((depth, line)) = too_deep(text) {
        return Err(Problems(vec![problem(
            Some(line),
            format!(
                "the Katalog nests {depth} levels deep here; at most {MAX_NESTING} are allowed"
            ),
            Some("a Katalog needs about 12 levels; check the indentation".into()),
        )]));
    }
    let base = file.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut problems = Vec::new();
    let mut merged: Option<Katalog> = None;
    let mut entry_lines: BTreeMap<String, usize> = BTreeMap::new();
    let mut note_lines: BTreeMap<String, usize> = BTreeMap::new();
    for (doc, first_line) in split_documents(text) {
        if doc.trim().is_empty() {
            continue;
        }
        let lines = LineIndex::build(doc, first_line);
        let at = |path: &str, message: String, hint: Option<String>| Problem {
            file: file.to_path_buf(),
            line: lines.line_of(path).or(Some(first_line)),
            path: path.to_string(),
            message,
            hint,
        };
        let value: Value = match serde_saphyr::from_str_with_options(doc, yaml_options()) {
            Ok(v) => v,
            Err(e) => {
                let line = e.location().map(|l| l.line() as usize + first_line - 1);
                problems.push(Problem {
                    file: file.to_path_buf(),
                    line: line.or(Some(first_line)),
                    path: String::new(),
                    message: format!("not valid YAML: {}", first_line_of(&e.to_string())),
                    hint: line.and_then(|l| quote_hint(text, l)),
                });
                continue;
            }
        };
        let Some(mut katalog) =
            deserialize_collecting(value.clone(), &mut |path, message, hint| {
                problems.push(at(path, message, hint));
            })
        else {
            continue;
        };
        for Finding {
            path,
            message,
            hint,
        } in resolve(&mut katalog, &base, &value)
            .into_iter()
            .chain(validate(&katalog))
        {
            problems.push(at(&path, message, hint));
        }
        for Finding {
            path,
            message,
            hint,
        } in notices(&katalog)
        {
            katalog.notices.push(at(&path, message, hint));
        }
        let merged = merged.get_or_insert_with(|| Katalog {
            api_version: katalog.api_version.clone(),
            kind: katalog.kind.clone(),
            metadata: katalog.metadata.clone(),
            notes: NotesBlock::default(),
            spec: KatalogSpec {
                crds: BTreeMap::new(),
            },
            notices: Vec::new(),
        });
        merged.notices.append(&mut katalog.notices);
        for (i, note) in katalog.notes.functions.into_iter().enumerate() {
            let path = format!("notes.functions[{i}]");
            if let Some(first) = note_lines.get(&note.name) {
                problems.push(at(
                    &path,
                    format!("note \"{}\" is declared twice", note.name),
                    Some(format!("the first declaration is on line {first}")),
                ));
                continue;
            }
            note_lines.insert(
                note.name.clone(),
                lines.line_of(&path).unwrap_or(first_line),
            );
            merged.notes.functions.push(note);
        }
        for (name, entry) in katalog.spec.crds {
            let path = format!("spec.crds.{name}");
            if let Some(first) = entry_lines.get(&name) {
                problems.push(at(
                    &path,
                    format!("entry \"{name}\" is declared twice"),
                    Some(format!("the first declaration is on line {first}")),
                ));
                continue;
            }
            entry_lines.insert(name.clone(), lines.line_of(&path).unwrap_or(first_line));
            merged.spec.crds.insert(name, entry);
        }
    }
    match merged {
        Some(k) if problems.is_empty() => Ok(k),
        None if problems.is_empty() => Err(Problems(vec![Problem {
            file: file.to_path_buf(),
            line: None,
            path: String::new(),
            message: "the file holds no Katalog document".into(),
            hint: Some(
                "start with `apiVersion: orkestra.orkspace.io/v1` and `kind: Katalog`".into(),
            ),
        }])),
        _ => {
            // File order, as a reader goes through it (stable: one line's problems keep theirs).
            problems.sort_by_key(|p| p.line.unwrap_or(usize::MAX));
            Err(Problems(problems))
        }
    }
}

/// "Quote the value", when that is the likely fix of a YAML syntax error on `line` (1-based) of
/// `text`, or on the line before it (where a value that runs on ends): a plain value that YAML
/// reads as something else, a template's `{{` (a flow map), an alias `*`, an anchor `&`, a tag
/// `!`, a directive `%`, a reserved `@` or backtick, or a `: ` inside (a nested map).
fn quote_hint(text: &str, line: usize) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    [line, line.checked_sub(1)?]
        .into_iter()
        .filter(|l| *l >= 1)
        .find_map(|l| lines.get(l - 1).and_then(|t| quoted_form(t)))
        .map(|fixed| format!("quote the value: `{fixed}`"))
}

/// The line with its value quoted, when the value is a plain one that needs quotes.
fn quoted_form(line: &str) -> Option<String> {
    let content = line.trim();
    let (item, content) = match content.strip_prefix("- ") {
        Some(rest) => ("- ", rest.trim_start()),
        None => ("", content),
    };
    let is_key = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    };
    let (key, value) = match content.split_once(": ") {
        Some((k, v)) if is_key(k) => (Some(k), v.trim()),
        _ => (None, content),
    };
    let starts = ["{{", "*", "&", "!", "%", "@", "`"];
    let needs = !value.is_empty()
        && !value.starts_with(['"', '\''])
        && (starts.iter().any(|s| value.starts_with(s)) || (key.is_some() && value.contains(": ")));
    if !needs {
        return None;
    }
    let quoted = if value.contains('"') && !value.contains('\'') {
        format!("'{value}'")
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    };
    Some(match key {
        Some(k) => format!("{item}{k}: {quoted}"),
        None => format!("{item}{quoted}"),
    })
}

/// The YAML parser's own budget, a second line behind [`too_deep`] and the size limit.
fn yaml_options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_NESTING + 8;
    budget.max_nodes = 200_000;
    budget.max_total_scalar_bytes = MAX_FILE_BYTES as usize;
    let mut options = serde_saphyr::Options::default();
    options.budget = Some(budget);
    options
}

/// Scans the text (without parsing it) for nesting deeper than [`MAX_NESTING`]: block
/// indentation levels, `- ` items and open flow brackets. Returns the depth and its line.
fn too_deep(text: &str) -> Option<(usize, usize)> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    let mut block_scalar: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let content = raw.trim_start();
        let col = raw.len() - content.len();
        if let Some(c) = block_scalar {
            if content.is_empty() || col > c {
                continue;
            }
            block_scalar = None;
        }
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if flow == 0 {
            while indents.last().is_some_and(|top| *top >= col) {
                indents.pop();
            }
            indents.push(col);
        }
        let mut dashes = 0;
        let mut rest = content;
        while let Some(r) = rest
            .strip_prefix("- ")
            .or_else(|| (rest == "-").then_some(""))
        {
            dashes += 1;
            rest = r.trim_start();
        }
        let mut quote: Option<char> = None;
        let mut line_max = flow;
        let mut prev = ' ';
        // The last significant character: a bracket opens a flow collection only where a
        // value may start (not inside a plain scalar such as `http://{{ .x }}`).
        let mut last = ':';
        for ch in rest.chars() {
            match quote {
                Some(q) if ch == q => quote = None,
                Some(_) => {}
                None => match ch {
                    '"' | '\'' if matches!(last, ':' | '[' | '{' | ',' | '-') => {
                        quote = Some(ch);
                    }
                    '#' if prev == ' ' => break,
                    '[' | '{' if matches!(last, ':' | '[' | '{' | ',' | '-' | '?') => {
                        flow += 1;
                        line_max = line_max.max(flow);
                    }
                    ']' | '}' if flow > 0 => flow -= 1,
                    _ => {}
                },
            }
            prev = ch;
            if !ch.is_whitespace() {
                last = ch;
            }
        }
        let depth = indents.len() + dashes + line_max;
        if depth > MAX_NESTING {
            return Some((depth, i + 1));
        }
        let value = strip_comment_tail(rest);
        if flow == 0
            && (value.ends_with('|')
                || value.ends_with('>')
                || value.ends_with("|-")
                || value.ends_with(">-")
                || value.ends_with("|+")
                || value.ends_with(">+"))
        {
            block_scalar = Some(col);
        }
    }
    None
}

fn strip_comment_tail(s: &str) -> &str {
    match s.find(" #") {
        Some(i) => s[..i].trim_end(),
        None => s.trim_end(),
    }
}

/// Deserialises into [`Katalog`], reporting every unknown field and unknown enum value (each is
/// removed and deserialisation retried), then the first other type error of each part. The
/// entries of `spec.crds` are read one by one and every unknown field of an object is removed
/// in one go, so a problem costs a retry of its entry, not of the whole file: loading stays
/// linear in the size of the Katalog however many entries have problems.
fn deserialize_collecting(
    mut value: Value,
    report: &mut dyn FnMut(&str, String, Option<String>),
) -> Option<Katalog> {
    let entries = match value.pointer_mut("/spec/crds") {
        Some(Value::Object(crds)) => std::mem::take(crds),
        _ => serde_json::Map::new(),
    };
    let mut katalog = collect::<Katalog>(value, "", report);
    let mut complete = katalog.is_some();
    for (name, entry) in entries {
        let path = format!("spec.crds.{name}");
        match collect::<CrdEntry>(entry, &path, report) {
            Some(entry) => {
                if let Some(k) = &mut katalog {
                    k.spec.crds.insert(name, entry);
                }
            }
            None => complete = false,
        }
    }
    katalog.filter(|_| complete)
}

/// Deserialises the part of the Katalog at `prefix` (the whole of it when empty) as
/// [`deserialize_collecting`] does.
fn collect<T: DeserializeOwned>(
    mut value: Value,
    prefix: &str,
    report: &mut dyn FnMut(&str, String, Option<String>),
) -> Option<T> {
    let at = |segments: &[Segment]| {
        let path = render_path(segments);
        match (prefix.is_empty(), path.is_empty()) {
            (true, _) => path,
            (false, true) => prefix.to_string(),
            (false, false) if path.starts_with('[') => format!("{prefix}{path}"),
            (false, false) => format!("{prefix}.{path}"),
        }
    };
    // Each round removes at least one offending node, so the loop ends; the bound guards
    // pathological input.
    let mut removed: Vec<String> = Vec::new();
    let mut wrong = false;
    for _ in 0..200 {
        let err = match serde_path_to_error::deserialize::<_, T>(&value) {
            // Unknown fields were reported and removed: still check the rest semantically. A
            // value of the wrong type taken out leaves no Katalog to check.
            Ok(t) => return (!wrong).then_some(t),
            Err(err) => err,
        };
        let segments: Vec<Segment> = err.path().iter().cloned().collect();
        let message = err.inner().to_string();
        if let Some((_, expected)) = parse_unknown(&message, "unknown field `") {
            // Every field of this object that its type does not know, at once.
            let (_, object) = segments.split_last()?;
            let Some(Value::Object(fields)) = node_at(&mut value, object) else {
                return None;
            };
            let unknown: Vec<String> = fields
                .keys()
                .filter(|k| !expected.contains(k))
                .cloned()
                .collect();
            if unknown.is_empty() {
                return None;
            }
            for name in unknown {
                fields.remove(&name);
                let mut place = object.to_vec();
                place.push(Segment::Map { key: name.clone() });
                let (msg, hint) = match REFUSED_FIELDS.iter().find(|(n, _)| *n == name) {
                    Some((_, why)) => (
                        format!("\"{name}\" is not supported by ork"),
                        Some((*why).to_string()),
                    ),
                    None => (
                        format!("unknown field \"{name}\""),
                        hint_for(&name, &expected),
                    ),
                };
                report(&at(&place), msg, hint);
            }
            continue;
        }
        if let Some((name, expected)) = parse_unknown(&message, "unknown variant `") {
            report(
                &at(&segments),
                format!("unknown value \"{name}\""),
                hint_for(&name, &expected),
            );
        } else if let Some(missing) = message.strip_prefix("missing field `")
            && let Some(field) = missing.split('`').next()
            && removed.iter().any(|r| {
                let parent = at(&segments);
                *r == if parent.is_empty() {
                    field.to_string()
                } else {
                    format!("{parent}.{field}")
                }
            })
        {
            // Only missing because its wrong value was taken out above: said already.
            return None;
        } else if !segments.is_empty() && !message.starts_with("missing field") {
            // A value of the wrong type or form: said, taken out, and the rest read on, so
            // that one bad field does not hide the next (SPEC §16).
            let path = at(&segments);
            let field = match segments.last() {
                Some(Segment::Map { key }) => key.as_str(),
                _ => "",
            };
            report(
                &path,
                tidy(&message),
                type_hint(&message).or_else(|| field_hint(field, &message)),
            );
            removed.push(path);
            wrong = true;
        } else {
            report(&at(&segments), tidy(&message), type_hint(&message));
            return None;
        }
        if !remove_at(&mut value, &segments) {
            return None;
        }
    }
    None
}

/// What to write instead, in a Katalog author's words, for a field of the wrong type.
fn field_hint(field: &str, message: &str) -> Option<String> {
    const DURATIONS: [&str; 9] = [
        "timeout",
        "resync",
        "initial",
        "max",
        "interval",
        "requeueAfter",
        "period",
        "leaseDuration",
        "after",
    ];
    if DURATIONS.contains(&field) && message.contains("expected") {
        return Some(
            "a duration is a number with its unit, as Go writes it: `5s`, `2m`, `1h30m`".into(),
        );
    }
    if ["u8", "u16", "u32", "u64", "usize"]
        .iter()
        .any(|t| message.ends_with(&format!("expected {t}")))
    {
        return Some("a whole number, 0 or more".into());
    }
    None
}

/// From "unknown field `x`, expected one of `a`, `b`" → ("x", ["a", "b"]).
fn parse_unknown(message: &str, prefix: &str) -> Option<(String, Vec<String>)> {
    let rest = message.strip_prefix(prefix)?;
    let end = rest.find('`')?;
    let name = rest[..end].to_string();
    let expected = rest[end + 1..]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect();
    Some((name, expected))
}

fn hint_for(name: &str, expected: &[String]) -> Option<String> {
    if expected.is_empty() {
        return Some("this block takes no fields".into());
    }
    let names: Vec<&str> = expected.iter().map(String::as_str).collect();
    Some(match closest(name, names.iter().copied()) {
        Some(best) => format!("did you mean \"{best}\"?"),
        None => format!("expected one of: {}", names.join(", ")),
    })
}

fn type_hint(message: &str) -> Option<String> {
    if message.contains("did not match any variant of untagged enum DependsOn") {
        return Some(
            "write a list of entry names, a map name: started|healthy, or name: {condition: healthy}"
                .into(),
        );
    }
    if message.starts_with("missing field `default`") {
        return Some("add `default: false`".into());
    }
    None
}

fn tidy(message: &str) -> String {
    message
        .replace(
            "data did not match any variant of untagged enum DependsOn",
            "invalid dependsOn",
        )
        .replace('`', "\"")
}

fn first_line_of(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

fn render_path(segments: &[Segment]) -> String {
    let mut out = String::new();
    for seg in segments {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Enum { .. } | Segment::Unknown => {}
        }
    }
    out
}

/// The node at `segments` in `value`, if the path leads anywhere.
fn node_at<'v>(value: &'v mut Value, segments: &[Segment]) -> Option<&'v mut Value> {
    let mut node = value;
    for seg in segments {
        node = match (seg, node) {
            (Segment::Map { key }, Value::Object(m)) => m.get_mut(key)?,
            (Segment::Seq { index }, Value::Array(a)) => a.get_mut(*index)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Removes the node at `segments` from `value`; false if the path does not lead anywhere.
fn remove_at(value: &mut Value, segments: &[Segment]) -> bool {
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    let Some(node) = node_at(value, parents) else {
        return false;
    };
    match (last, node) {
        (Segment::Map { key }, Value::Object(m)) => m.remove(key).is_some(),
        (Segment::Seq { index }, Value::Array(a)) if *index < a.len() => {
            a.remove(*index);
            true
        }
        _ => false,
    }
}
