//! Each broken Katalog names the file, line and field of its problem, with a hint.

use std::path::Path;

use ork_katalog::{Problem, load_str};

const VALID: &str = include_str!("../../../examples/webapp/katalog.yaml");

fn problems(yaml: &str) -> Vec<Problem> {
    load_str(yaml, Path::new("k.yaml"))
        .expect_err("this Katalog is broken")
        .0
}

/// The example with `from` replaced by `to` (exactly once).
fn broken(from: &str, to: &str) -> String {
    assert_eq!(VALID.matches(from).count(), 1, "{from:?} must occur once");
    VALID.replace(from, to)
}

fn line_of(yaml: &str, needle: &str) -> usize {
    yaml.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .expect("needle is in the yaml")
}

fn only(problems: &[Problem]) -> &Problem {
    assert_eq!(problems.len(), 1, "expected one problem, got {problems:#?}");
    &problems[0]
}

const REMOTE: &str = "spec.crds.webapp.operatorBox.reconcile.remote";

#[test]
fn the_example_is_valid() {
    let k = load_str(VALID, Path::new("k.yaml")).expect("example is valid");
    assert_eq!(k.spec.crds.len(), 1);
}

#[test]
fn unknown_field_names_line_path_and_suggestion() {
    let yaml = broken("timeout: 10s", "timout: 10s");
    let p = problems(&yaml);
    let p = only(&p);
    assert_eq!(p.path, format!("{REMOTE}.timout"));
    assert_eq!(p.line, Some(line_of(&yaml, "timout")));
    assert_eq!(p.hint.as_deref(), Some("did you mean \"timeout\"?"));
    assert!(
        p.to_string()
            .starts_with(&format!("k.yaml:{}: ", line_of(&yaml, "timout")))
    );
}

#[test]
fn every_unknown_field_is_reported_not_just_the_first() {
    let yaml = broken("timeout: 10s", "timout: 10s\n            retries: 3")
        .replace("workers: 2", "wokers: 2");
    let paths: Vec<String> = problems(&yaml).into_iter().map(|p| p.path).collect();
    assert_eq!(paths.len(), 3, "{paths:?}");
    assert!(paths.contains(&format!("{REMOTE}.retries")));
    assert!(paths.contains(&"spec.crds.webapp.operatorBox.reconcile.wokers".to_string()));
}

#[test]
fn missing_default_false_next_to_remote() {
    let yaml = broken("          default: false\n", "");
    let p = problems(&yaml);
    let p = only(&p);
    assert_eq!(p.path, REMOTE);
    assert!(p.message.contains("`default: false` is required"));
    assert_eq!(p.line, Some(line_of(&yaml, "remote:")));
}

#[test]
fn default_true_with_remote_points_at_default() {
    let yaml = broken("default: false", "default: true");
    let p = problems(&yaml);
    assert_eq!(only(&p).line, Some(line_of(&yaml, "default: true")));
}

#[test]
fn missing_endpoint() {
    let yaml = broken(
        "            endpoint: \"http://127.0.0.1:8025/reconcile\"\n",
        "",
    );
    let p = problems(&yaml);
    let p = only(&p);
    assert_eq!(p.path, format!("{REMOTE}.endpoint"));
    assert_eq!(p.message, "reconcile.remote.endpoint is required");
    assert_eq!(p.line, Some(line_of(&yaml, "remote:")));
}

#[test]
fn bad_duration() {
    let yaml = broken("timeout: 10s", "timeout: ten seconds");
    let p = problems(&yaml);
    let p = only(&p);
    assert_eq!(p.path, format!("{REMOTE}.timeout"));
    assert!(
        p.message.contains("invalid duration \"ten seconds\""),
        "{}",
        p.message
    );
    assert_eq!(p.line, Some(line_of(&yaml, "ten seconds")));
}

#[test]
fn bad_template_in_endpoint_and_args() {
    let yaml = broken(
        "environment: \"{{ .spec.environment | default \\\"dev\\\" }}\"",
        "environment: \"{{ .spec.environment | dflt \\\"dev\\\" }}\"",
    );
    let p = problems(&yaml);
    let p = only(&p);
    assert_eq!(p.path, format!("{REMOTE}.args.environment"));
    assert!(
        p.message.contains("function \"dflt\" not defined"),
        "{}",
        p.message
    );
    assert_eq!(p.line, Some(line_of(&yaml, "dflt")));

    let yaml = broken(
        "endpoint: \"http://127.0.0.1:8025/reconcile\"",
        "endpoint: \"http://{{ .spec.host /reconcile\"",
    );
    let p = problems(&yaml);
    assert!(only(&p).message.contains("invalid template"));
    assert_eq!(only(&p).path, format!("{REMOTE}.endpoint"));
}

#[test]
fn auth_with_both_or_neither_source() {
    let both = broken(
        "            timeout: 10s\n",
        "            timeout: 10s\n            auth:\n              env: TOKEN\n              secretRef: {name: s, key: k}\n",
    );
    let p = problems(&both);
    assert_eq!(only(&p).path, format!("{REMOTE}.auth"));
    assert!(only(&p).message.contains("exactly one of secretRef or env"));
    assert_eq!(only(&p).line, Some(line_of(&both, "auth:")));

    let neither = broken(
        "            timeout: 10s\n",
        "            timeout: 10s\n            auth:\n              header: X-Key\n",
    );
    let p = problems(&neither);
    assert!(only(&p).message.contains("exactly one of secretRef or env"));
}

#[test]
fn unknown_sentinel_and_operator() {
    let yaml = broken(
        "sentinels: [generationChanged]",
        "sentinels: [generationChange]",
    );
    let p = problems(&yaml);
    assert_eq!(
        only(&p).path,
        "spec.crds.webapp.operatorBox.preReconcile.sentinels[0]"
    );
    assert_eq!(
        only(&p).hint.as_deref(),
        Some("did you mean \"generationChanged\"?")
    );
    assert_eq!(only(&p).line, Some(line_of(&yaml, "generationChange]")));

    let yaml = broken("operator: exists", "operator: exist");
    let p = problems(&yaml);
    assert_eq!(
        only(&p).path,
        "spec.crds.webapp.operatorBox.validation.rules[0].operator"
    );
    assert_eq!(only(&p).hint.as_deref(), Some("did you mean \"exists\"?"));
    assert_eq!(only(&p).line, Some(line_of(&yaml, "operator: exist")));
}

#[test]
fn sentinel_used_in_a_gate_must_be_declared() {
    let yaml = broken(
        "sentinels: [generationChanged]",
        "sentinels: [generationChanged]\n          enqueueGate:\n            when:\n              - sentinel: labelsChanged",
    );
    let p = problems(&yaml);
    assert!(
        only(&p)
            .message
            .contains("sentinel \"labelsChanged\" is not declared")
    );
    assert_eq!(
        only(&p).line,
        Some(line_of(&yaml, "- sentinel: labelsChanged"))
    );
}

#[test]
fn duplicate_managed_resources() {
    let yaml = broken(
        "              - {group: \"\", version: v1, plural: services, kind: Service}\n",
        "              - {group: \"\", version: v1, plural: services, kind: Service}\n              - {group: apps, plural: deployments}\n",
    );
    let p = problems(&yaml);
    assert_eq!(only(&p).path, format!("{REMOTE}.managedResources[2]"));
    assert!(
        only(&p)
            .message
            .contains("duplicate managed resource apps/deployments")
    );
    assert_eq!(
        only(&p).line,
        Some(line_of(&yaml, "{group: apps, plural: deployments}"))
    );
}

#[test]
fn unsupported_orkestra_features_are_named() {
    let yaml = broken(
        "          default: false\n",
        "          default: false\n          onCreate: []\n",
    );
    let p = problems(&yaml);
    assert_eq!(only(&p).message, "\"onCreate\" is not supported by ork");
    assert_eq!(only(&p).line, Some(line_of(&yaml, "onCreate")));

    let yaml = broken(
        "          default: false\n",
        "          default: false\n          hooks: {}\n",
    );
    assert_eq!(
        only(&problems(&yaml)).message,
        "\"hooks\" is not supported by ork"
    );
}

#[test]
fn type_errors_name_the_field() {
    let yaml = broken("workers: 2", "workers: many");
    let p = problems(&yaml);
    assert_eq!(
        only(&p).path,
        "spec.crds.webapp.operatorBox.reconcile.workers"
    );
    assert_eq!(only(&p).line, Some(line_of(&yaml, "workers: many")));
}

#[test]
fn yaml_syntax_error_has_a_line() {
    let yaml = broken("workers: 2", "workers: [2");
    let p = problems(&yaml);
    assert!(
        only(&p).message.starts_with("not valid YAML"),
        "{}",
        only(&p).message
    );
    assert!(only(&p).line.is_some());
}

#[test]
fn a_yaml_syntax_error_a_quoted_value_fixes_says_to_quote_it() {
    let endpoint = "            endpoint: \"http://127.0.0.1:8025/reconcile\"\n";
    for (value, fixed) in [
        (
            "{{ .spec.url }}",
            "quote the value: `endpoint: \"{{ .spec.url }}\"`",
        ),
        (
            "http://svc: 8025/reconcile",
            "quote the value: `endpoint: \"http://svc: 8025/reconcile\"`",
        ),
        ("*svc", "quote the value: `endpoint: \"*svc\"`"),
        ("@svc", "quote the value: `endpoint: \"@svc\"`"),
        ("`svc`", "quote the value: `endpoint: \"`svc`\"`"),
        (
            "{{ printf \"%s\" .spec.url }}",
            "quote the value: `endpoint: '{{ printf \"%s\" .spec.url }}'`",
        ),
    ] {
        let line = format!("            endpoint: {value}\n");
        let yaml = broken(endpoint, &line);
        let p = problems(&yaml);
        let p = only(&p);
        assert!(
            p.message.starts_with("not valid YAML"),
            "{value}: {}",
            p.message
        );
        assert_eq!(p.line, Some(line_of(&yaml, line.trim())), "{value}");
        assert_eq!(p.hint.as_deref(), Some(fixed), "{value}");
    }
    // A list item too.
    let yaml = broken(
        "    webapp:\n",
        "    webapp:\n      crFiles:\n        - {{ .x }}\n",
    );
    let p = problems(&yaml);
    assert_eq!(
        only(&p).hint.as_deref(),
        Some("quote the value: `- \"{{ .x }}\"`")
    );
    // A syntax error quoting does not fix gets no such hint.
    let p = problems(&broken("workers: 2", "workers: [2"));
    assert!(only(&p).message.starts_with("not valid YAML"));
    assert_eq!(only(&p).hint, None);
}

#[test]
fn multi_entry_and_multi_document_katalogs() {
    let second = VALID
        .replace("    webapp:", "    worker:")
        .replace("kind: WebApp", "kind: Worker")
        .replace("plural: webapps", "plural: workers");
    let two_docs = format!("{VALID}---\n{second}");
    let k = load_str(&two_docs, Path::new("k.yaml")).expect("two documents are valid");
    assert_eq!(k.spec.crds.keys().collect::<Vec<_>>(), ["webapp", "worker"]);

    let dup = format!("{VALID}---\n{VALID}");
    let p = problems(&dup);
    assert!(only(&p).message.contains("declared twice"));
    assert!(only(&p).line.expect("line") > VALID.lines().count());
}

#[test]
fn unknown_dependency_and_cross_entry() {
    let yaml = broken(
        "      description:",
        "      dependsOn: [databse]\n      description:",
    );
    let p = problems(&yaml);
    assert!(
        only(&p)
            .message
            .contains("\"databse\", which is not an entry")
    );
}

#[test]
fn exec_transport_fields_are_checked() {
    let exec = broken(
        "endpoint: \"http://127.0.0.1:8025/reconcile\"",
        "command: [/bin/sh]\n            workingDir: scripts\n            env: {A: b}",
    );
    load_str(&exec, Path::new("k.yaml")).expect("a command with env and workingDir is valid");

    let both = broken(
        "endpoint: \"http://127.0.0.1:8025/reconcile\"",
        "endpoint: \"http://127.0.0.1:8025/reconcile\"\n            command: [/bin/sh]",
    );
    assert!(
        only(&problems(&both))
            .message
            .contains("either `endpoint` (HTTP) or `command` (exec)")
    );

    let env_without_command = broken(
        "            timeout: 10s\n",
        "            timeout: 10s\n            env: {A: b}\n",
    );
    let p = problems(&env_without_command);
    assert_eq!(only(&p).path, format!("{REMOTE}.env"));
    assert_eq!(
        only(&p).line,
        Some(line_of(&env_without_command, "env: {A: b}"))
    );

    let auth_with_command = broken(
        "endpoint: \"http://127.0.0.1:8025/reconcile\"",
        "command: [/bin/sh]\n            auth: {env: TOKEN}",
    );
    assert!(
        only(&problems(&auth_with_command))
            .message
            .contains("auth applies to an HTTP endpoint")
    );
}

#[test]
fn tls_needs_https_and_one_ca_source() {
    let plain = broken(
        "            timeout: 10s\n",
        "            timeout: 10s\n            tls: {caSecretRef: {name: ca}}\n",
    );
    assert!(
        only(&problems(&plain))
            .message
            .contains("tls needs an https:// endpoint")
    );

    let both = broken(
        "endpoint: \"http://127.0.0.1:8025/reconcile\"",
        "endpoint: \"https://svc.team/reconcile\"\n            tls: {caBundle: \"-----BEGIN CERTIFICATE-----\", caSecretRef: {name: ca}}",
    );
    assert!(
        only(&problems(&both))
            .message
            .contains("either caBundle or caSecretRef")
    );

    let ok = broken(
        "endpoint: \"http://127.0.0.1:8025/reconcile\"",
        "endpoint: \"https://svc.team/reconcile\"\n            tls: {caSecretRef: {name: ca}, clientCertSecretRef: {name: ork-client}}",
    );
    load_str(&ok, Path::new("k.yaml")).expect("https with Secrets is valid");
}

#[test]
fn every_unknown_field_of_one_block_is_reported_but_not_an_alias() {
    let yaml = broken(
        "timeout: 10s",
        "timout: 10s\n            protocol: http\n            retries: 3\n            zzz: 1",
    );
    let mut paths: Vec<String> = problems(&yaml).into_iter().map(|p| p.path).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            format!("{REMOTE}.retries"),
            format!("{REMOTE}.timout"),
            format!("{REMOTE}.zzz")
        ]
    );
}

/// A Katalog of `n` entries, each with the unknown field `timout` and dependencies on `deps`
/// names that are not entries.
fn many_entries(n: usize, deps: usize) -> String {
    let mut out = String::from(
        "apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nmetadata: {name: x}\nspec:\n  crds:\n",
    );
    for i in 0..n {
        let names: Vec<String> = (0..deps).map(|j| format!("e{i}x{j}")).collect();
        out.push_str(&format!(
            "    e{i}:\n      apiTypes: {{group: g{i}.io, version: v1, kind: K{i}, plural: k{i}s}}\n      dependsOn: [{}]\n      operatorBox:\n        reconcile:\n          default: false\n          remote:\n            endpoint: http://127.0.0.1:1/\n            timout: 5s\n",
            names.join(", ")
        ));
    }
    out
}

#[test]
fn every_entry_with_an_unknown_field_is_reported_with_its_line() {
    let yaml = many_entries(300, 0);
    let p = problems(&yaml);
    let unknown: Vec<&Problem> = p
        .iter()
        .filter(|p| p.message == "unknown field \"timout\"")
        .collect();
    assert_eq!(unknown.len(), 300, "one per entry, not the first 200");
    for (i, line) in yaml
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains("timout"))
        .map(|(i, _)| i + 1)
        .enumerate()
    {
        let path = format!("spec.crds.e{i}.operatorBox.reconcile.remote.timout");
        let found = unknown
            .iter()
            .find(|p| p.path == path)
            .unwrap_or_else(|| panic!("{path} not reported"));
        assert_eq!(found.line, Some(line), "{path}");
        assert_eq!(found.hint.as_deref(), Some("did you mean \"timeout\"?"));
    }
}

#[test]
fn unknown_dependencies_get_a_bounded_number_of_suggestions() {
    let yaml = many_entries(50, 2);
    let p = problems(&yaml);
    let deps: Vec<&Problem> = p
        .iter()
        .filter(|p| p.message.starts_with("dependsOn names"))
        .collect();
    assert_eq!(deps.len(), 100, "every unknown name is reported");
    let hinted = deps.iter().filter(|p| p.hint.is_some()).count();
    assert!(
        (1..=32).contains(&hinted),
        "{hinted} suggestions worked out"
    );
    assert!(deps.iter().all(|p| p.line.is_some()));
}

#[test]
fn every_field_of_the_wrong_type_is_reported_with_what_to_write() {
    let yaml = broken("timeout: 10s", "timeout: 5")
        .replace("workers: 2", "workers: -1")
        .replace("resync: 5m", "resync: 2x");
    let p = problems(&yaml);
    let at = |field: &str| {
        p.iter()
            .find(|p| p.path.ends_with(field))
            .unwrap_or_else(|| panic!("{field} not reported: {p:#?}"))
    };
    let timeout = at("remote.timeout");
    assert_eq!(timeout.line, Some(line_of(&yaml, "timeout: 5")));
    assert!(
        timeout.hint.as_deref().is_some_and(|h| h.contains("`5s`")),
        "{timeout:?}"
    );
    let workers = at("reconcile.workers");
    assert_eq!(
        workers.hint.as_deref(),
        Some("a whole number, 0 or more"),
        "{workers:?}"
    );
    at("reconcile.resync");
    assert_eq!(p.len(), 3, "{p:#?}");
}

#[test]
fn a_core_plural_that_does_not_exist_is_named_with_the_one_meant() {
    let yaml = broken("plural: services, kind: Service", "plural: service");
    let p = problems(&yaml);
    let p = only(&p);
    assert!(p.path.ends_with(".plural"), "{p}");
    assert_eq!(p.message, "the core API group has no resource `service`");
    assert_eq!(p.hint.as_deref(), Some("did you mean `services`?"));
}

#[test]
fn an_exec_program_that_is_missing_or_not_executable_is_refused() {
    let dir = std::env::temp_dir().join(format!("ork-program-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a folder");
    let katalog = dir.join("k.yaml");
    let yaml = broken(
        "endpoint: \"http://127.0.0.1:8025/reconcile\"",
        "command: [\"./reconcile.sh\"]",
    );
    let load = || load_str(&yaml, &katalog);
    let missing = load().expect_err("no program").0;
    assert!(
        only(&missing)
            .message
            .ends_with("reconcile.sh does not exist"),
        "{missing:?}"
    );
    let script = dir.join("reconcile.sh");
    std::fs::write(&script, "#!/bin/sh\n").expect("written");
    let not_executable = load().expect_err("not executable").0;
    assert_eq!(
        only(&not_executable).hint.as_deref(),
        Some(format!("chmod +x {}", script.display()).as_str())
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    assert!(load().is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn admission_needs_a_literal_endpoint_a_path_and_a_timeout_the_api_server_waits_for() {
    let ok = broken(
        "            timeout: 10s\n",
        "            timeout: 10s\n            admission: {mutate: true, failurePolicy: Ignore}\n",
    );
    let k = load_str(&ok, Path::new("k.yaml")).expect("valid");
    let a = k.spec.crds["webapp"]
        .operator_box
        .reconcile
        .remote
        .as_ref()
        .and_then(|r| r.admission.clone())
        .expect("admission");
    assert!(a.validate && a.mutate);
    assert_eq!(a.path, "/admit");
    assert_eq!(a.failure_policy, ork_katalog::FailurePolicy::Ignore);

    let yaml = broken(
        "            timeout: 10s\n",
        "            timeout: 10s\n            admission: {path: admit, timeout: 30s}\n",
    );
    let mut paths: Vec<String> = problems(&yaml).into_iter().map(|p| p.path).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            format!("{REMOTE}.admission.path"),
            format!("{REMOTE}.admission.timeout")
        ]
    );

    let yaml = broken(
        "            endpoint: \"http://127.0.0.1:8025/reconcile\"\n",
        "            endpoint: \"http://{{ .metadata.namespace }}.svc:8025/reconcile\"\n            admission: {validate: false}\n",
    );
    let messages: Vec<String> = problems(&yaml).into_iter().map(|p| p.message).collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("admission needs a literal endpoint")),
        "{messages:?}"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("neither validate nor mutate")),
        "{messages:?}"
    );
}

#[test]
fn orkestra_s_entry_level_admission_points_at_remote_admission() {
    let yaml = broken(
        "      operatorBox:\n",
        "      admission: {enabled: true}\n      operatorBox:\n",
    );
    let p = problems(&yaml);
    let p = only(&p);
    assert!(p.message.contains("not supported by ork"), "{p}");
    assert!(
        p.hint
            .as_deref()
            .is_some_and(|h| h.contains("remote.admission")),
        "{p:?}"
    );
}

#[test]
fn a_rollout_s_shares_grow_within_0_to_100_its_candidate_is_literal_and_its_fields_are_known() {
    let ok = broken(
        "            timeout: 10s\n",
        "            timeout: 10s\n            rollout: {endpoint: \"http://127.0.0.1:9000/reconcile\", percent: 5, steps: [25, 100], interval: 10m}\n",
    );
    let k = load_str(&ok, Path::new("k.yaml")).expect("valid");
    let r = k.spec.crds["webapp"]
        .operator_box
        .reconcile
        .remote
        .as_ref()
        .and_then(|r| r.rollout.clone())
        .expect("rollout");
    assert_eq!((r.percent, r.steps.as_slice()), (5, &[25, 100][..]));
    assert_eq!(r.halt, ork_katalog::Halt::default());

    let yaml = broken(
        "            timeout: 10s\n",
        "            timeout: 10s\n            rollout:\n              endpoint: \"http://{{ .metadata.name }}/r\"\n              percent: 150\n              steps: [50, 40]\n              halt: {maxFailureRate: 2}\n",
    );
    let found = problems(&yaml);
    let mut paths: Vec<&str> = found.iter().map(|p| p.path.as_str()).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            format!("{REMOTE}.rollout.endpoint"),
            format!("{REMOTE}.rollout.halt.maxFailureRate"),
            format!("{REMOTE}.rollout.interval"),
            format!("{REMOTE}.rollout.percent"),
            format!("{REMOTE}.rollout.steps[0]"),
            format!("{REMOTE}.rollout.steps[1]"),
        ]
    );
    let percent = found
        .iter()
        .find(|p| p.path.ends_with("rollout.percent"))
        .expect("percent");
    assert_eq!(percent.line, Some(line_of(&yaml, "percent: 150")));
    assert!(percent.message.contains("outside 0..100"), "{percent}");

    let yaml = broken(
        "            timeout: 10s\n",
        "            timeout: 10s\n            rollout: {endpoint: \"http://127.0.0.1:9000/r\", precent: 5}\n",
    );
    let p = problems(&yaml);
    let p = only(&p);
    assert_eq!(p.path, format!("{REMOTE}.rollout.precent"));
    assert_eq!(p.hint.as_deref(), Some("did you mean \"percent\"?"));
}
