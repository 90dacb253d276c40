//! `cli.md`: every command and flag, from the argument parser itself.

use std::fmt::Write;

use clap::Command;

use super::markdown::{cell, code, table};

pub fn page() -> String {
    let root = crate::commands::command();
    let mut out = String::from("# Command line\n\n");
    out.push_str(super::markdown::GENERATED);
    let _ = writeln!(
        out,
        "{}. Every command prints its own help with `--help`; a flag with an environment \
         variable takes its value from it when not given.\n",
        root.get_about().map(|a| a.to_string()).unwrap_or_default()
    );
    let mut commands = Vec::new();
    collect(&root, "ork", &mut commands);
    for (path, command) in commands.iter().skip(1) {
        let _ = writeln!(out, "## `{path}`\n");
        if let Some(about) = command.get_long_about().or(command.get_about()) {
            let _ = writeln!(out, "{}\n", sentence(about.to_string().trim()));
        }
        arguments(&mut out, command);
    }
    out
}

/// `command` and every visible command below it, with its full name.
fn collect(command: &Command, path: &str, out: &mut Vec<(String, Command)>) {
    out.push((path.to_string(), command.clone()));
    for sub in command.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        collect(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

fn arguments(out: &mut String, command: &Command) {
    let mut rows = Vec::new();
    for arg in command.get_arguments() {
        if arg.is_hide_set() || matches!(arg.get_id().as_str(), "help" | "version") {
            continue;
        }
        let value = arg
            .get_value_names()
            .map(|names| {
                names
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_else(|| arg.get_id().as_str().to_uppercase());
        let takes_value = arg.get_action().takes_values();
        let name = match (arg.get_long(), arg.get_short()) {
            (Some(long), Some(short)) if takes_value => format!("-{short}, --{long} {value}"),
            (Some(long), Some(short)) => format!("-{short}, --{long}"),
            (Some(long), None) if takes_value => format!("--{long} {value}"),
            (Some(long), None) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) if arg.is_positional() => {
                let many = matches!(arg.get_num_args(), Some(r) if r.max_values() > 1);
                format!("{value}{}", if many { "..." } else { "" })
            }
            (None, None) => value.clone(),
        };
        let mut about = arg
            .get_long_help()
            .or(arg.get_help())
            .map(|h| sentence(&cell(&h.to_string())))
            .unwrap_or_default();
        let choices: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        if !choices.is_empty() && takes_value {
            let _ = write!(about, " One of {}.", choices.join(", "));
        }
        if arg.is_required_set() {
            about.push_str(" Required.");
        }
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| v.to_string_lossy().into_owned())
            .collect();
        let env = arg
            .get_env()
            .map(|e| e.to_string_lossy().into_owned())
            .unwrap_or_default();
        rows.push(vec![
            code(&name),
            code(&defaults.join(" ")),
            code(&env),
            about.trim().to_string(),
        ]);
    }
    table(
        out,
        &["Argument", "Default", "Environment", "Meaning"],
        &rows,
    );
}

/// Help text as a sentence: clap drops the final period of a doc comment.
fn sentence(text: &str) -> String {
    if text.is_empty() || text.ends_with(['.', '!', '?', ':']) {
        text.to_string()
    } else {
        format!("{text}.")
    }
}
