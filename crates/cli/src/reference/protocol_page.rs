//! `protocol.md`: the request ork sends, the answer it accepts, and every intent type with
//! its fields, from the JSON Schemas `ork schema request|response` prints.

use std::fmt::Write;

use serde_json::Value;

use super::markdown::{cell, code, table};
use super::schema::{Field, fields, resolve};

pub fn page() -> String {
    let request =
        serde_json::to_value(schemars::schema_for!(ork_protocol::Request)).unwrap_or(Value::Null);
    let response =
        serde_json::to_value(schemars::schema_for!(ork_protocol::Response)).unwrap_or(Value::Null);
    let mut out = String::from("# Request, answer and intents\n\n");
    out.push_str(super::markdown::GENERATED);
    out.push_str(
        "ork calls the entry's service with one JSON request per reconcile (an HTTP `POST`, or \
         an `exec` command's standard input) and reads one JSON answer. The whole answer is \
         checked before anything is written: one bad part refuses it all, nothing is applied, \
         and the CR says why (`AnswerRejected`). `ork schema request` and `ork schema response` \
         print the JSON Schemas this page is made from; `ork check` and `ork conform` test a \
         service against them.\n\n",
    );
    out.push_str("## The request\n\n");
    rows(&mut out, &fields(&request, &request, "", &[]));
    out.push_str("## The answer\n\n");
    let answer: Vec<Field> = fields(&response, &response, "", &[])
        .into_iter()
        .filter(|f| !f.path.starts_with("resources[]"))
        .collect();
    rows(&mut out, &answer);
    let variants = response
        .pointer("/properties/resources")
        .map(|r| resolve(&response, r))
        .and_then(|r| r.pointer("/items/oneOf"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    out.push_str(
        "## `resources`: full objects and intents\n\nEach item of `resources` is either a full \
         Kubernetes object (it has `apiVersion`) of a type the entry's `managedResources` \
         declares, or an intent: `{\"type\": …, \"fields\": {…}}`, which ork builds into the \
         object Orkestra builds for it, in the CR's namespace. An intent field ork does not know \
         is ignored with a Warning event (`AnswerWarning`).\n\n",
    );
    for variant in &variants {
        let variant = resolve(&response, variant);
        let title = variant
            .get("title")
            .and_then(Value::as_str)
            .unwrap_or("item");
        let _ = writeln!(out, "### {title}\n");
        let below = if title == "full object" {
            variant.clone()
        } else {
            variant
                .pointer("/properties/fields")
                .cloned()
                .unwrap_or(Value::Null)
        };
        rows(&mut out, &fields(&response, &below, "", &[]));
    }
    out
}

fn rows(out: &mut String, members: &[Field]) {
    let rows: Vec<Vec<String>> = members
        .iter()
        .map(|f| {
            let mut ty = cell(&f.ty);
            if f.required {
                ty.push_str(", required");
            }
            for b in &f.bounds {
                let _ = write!(ty, "; {}", cell(b));
            }
            vec![
                code(&f.path),
                ty,
                f.default.as_deref().map(code).unwrap_or_default(),
                cell(&f.doc),
            ]
        })
        .collect();
    table(out, &["Field", "Type", "Default", "Description"], &rows);
}
