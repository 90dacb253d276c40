use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::sentinel::Sentinel;

fn facts(in_cluster: bool) -> Facts {
    Facts {
        in_cluster,
        namespace: "ork-system".into(),
        version: "9.9.9".into(),
    }
}

fn render(src: &str, data: Value) -> String {
    let f = facts(false);
    Template::parse(src)
        .expect("template parses")
        .render_in(&RenderContext::new(&data).with_facts(&f))
        .expect("template renders")
}

fn render_err(src: &str, data: Value) -> String {
    let f = facts(false);
    Template::parse(src)
        .expect("template parses")
        .render_in(&RenderContext::new(&data).with_facts(&f))
        .expect_err("render fails")
        .to_string()
}

#[test]
fn fields_render_and_missing_keys_are_empty_at_any_depth() {
    let cr = json!({"metadata": {"name": "web"}, "spec": {"replicas": 3}});
    assert_eq!(render("{{ .metadata.name }}-svc", cr.clone()), "web-svc");
    assert_eq!(render("n={{ .spec.replicas }}", cr.clone()), "n=3");
    assert_eq!(render("[{{ .spec.nothing }}]", cr.clone()), "[]");
    assert_eq!(render("[{{ .metadata.labels.env }}]", cr), "[]");
}

#[test]
fn runtime_facts_are_under_ork_with_the_in_pod_alias() {
    let f = facts(true);
    let data = json!({"metadata": {"name": "a"}, "ork": "a CR field named ork is shadowed"});
    let t = Template::parse(
        "{{ .ork.inCluster }} {{ .ork.inPod }} {{ .ork.namespace }} {{ .ork.version }}",
    )
    .expect("parses");
    assert_eq!(
        t.render_in(&RenderContext::new(&data).with_facts(&f))
            .expect("renders"),
        "true true ork-system 9.9.9"
    );
    assert_eq!(
        render("{{ if .ork.inCluster }}in{{ else }}out{{ end }}", json!({})),
        "out"
    );
    assert_eq!(render("{{ inCluster }}", json!({})), "false");
    // inrun's Catalogs (Orkestra renamed) read the same facts under `.inrun`.
    let t = Template::parse(
        "{{ .inrun.inPod }} {{ .inrun.inCluster }} {{ .inrun.namespace }} {{ $.inrun.version }}",
    )
    .expect("parses");
    assert_eq!(
        t.render_in(&RenderContext::new(&data).with_facts(&f))
            .expect("renders"),
        "true true ork-system 9.9.9"
    );
}

#[test]
fn pipelines_functions_and_if_else_chains() {
    let cr = json!({"spec": {"env": "prod"}});
    assert_eq!(
        render("{{ .spec.tier | default \"web\" }}", cr.clone()),
        "web"
    );
    assert_eq!(render("{{ .spec.env | upper }}", cr.clone()), "PROD");
    assert_eq!(render("{{ .spec.env | toUpper }}", cr.clone()), "PROD");
    assert_eq!(
        render(
            "{{ if eq .spec.env \"prod\" }}big{{ else }}small{{ end }}",
            cr.clone()
        ),
        "big"
    );
    assert_eq!(
        render(
            "{{ if .ork.inPod }}in{{ else if .spec.env }}env{{ else }}none{{ end }}",
            cr.clone()
        ),
        "env"
    );
    assert_eq!(render("{{ printf \"%s-%d\" .spec.env 2 }}", cr), "prod-2");
}

#[test]
fn go_built_ins_behave_as_in_go() {
    let d = json!({"list": [1, 2, 3], "m": {"a-b": "x"}, "n": 5, "s": "hello"});
    assert_eq!(render("{{ index .list 1 }}", d.clone()), "2");
    assert_eq!(render("{{ index .m \"a-b\" }}", d.clone()), "x");
    assert_eq!(
        render("{{ len .list }} {{ len .s }} {{ len .m }}", d.clone()),
        "3 5 1"
    );
    assert_eq!(
        render("{{ slice .s 1 3 }} {{ slice .list 1 }}", d.clone()),
        "el [2 3]"
    );
    assert_eq!(
        render(
            "{{ lt 1 2 }} {{ le 2 2 }} {{ gt .n 9 }} {{ ge .n 5 }} {{ ne 1 2 }}",
            d.clone()
        ),
        "true true false true true"
    );
    assert_eq!(render("{{ eq .n 1 2 5 }}", d.clone()), "true");
    assert_eq!(
        render("{{ and 1 0 2 }} {{ or 0 \"\" 3 }} {{ not 0 }}", d.clone()),
        "0 3 true"
    );
    assert_eq!(render("{{ print 1 2 \"a\" }}", d.clone()), "1 2a");
    assert_eq!(render("{{ println \"a\" 1 }}x", d.clone()), "a 1\nx");
    assert_eq!(
        render(
            "{{ html \"<b>\" }} {{ js \"a'b\" }} {{ urlquery \"a b\" }}",
            d.clone()
        ),
        "&lt;b&gt; a\\'b a+b"
    );
    assert!(render_err("{{ lt .s 1 }}", d.clone()).contains("incompatible types"));
    assert!(render_err("{{ index .list 9 }}", d).contains("out of range"));
}

#[test]
fn and_or_short_circuit() {
    // The second operand would fail; Go's and/or never evaluate it.
    assert_eq!(render("{{ and false (div 1 0) }}", json!({})), "false");
    assert_eq!(render("{{ or true (div 1 0) }}", json!({})), "true");
}

#[test]
fn with_range_and_variables() {
    let d = json!({"items": ["a", "b"], "m": {"y": 2, "x": 1}, "spec": {"name": "n"}});
    assert_eq!(
        render("{{ with .spec }}{{ .name }}{{ end }}", d.clone()),
        "n"
    );
    assert_eq!(
        render("{{ with .nope }}x{{ else }}none{{ end }}", d.clone()),
        "none"
    );
    assert_eq!(
        render("{{ range .items }}[{{ . }}]{{ end }}", d.clone()),
        "[a][b]"
    );
    assert_eq!(
        render(
            "{{ range $i, $v := .items }}{{ $i }}={{ $v }};{{ end }}",
            d.clone()
        ),
        "0=a;1=b;"
    );
    assert_eq!(
        render(
            "{{ range $k, $v := .m }}{{ $k }}{{ $v }}{{ end }}",
            d.clone()
        ),
        "x1y2"
    );
    assert_eq!(
        render("{{ range .none }}x{{ else }}empty{{ end }}", d.clone()),
        "empty"
    );
    assert_eq!(render("{{ range 3 }}{{ . }}{{ end }}", d.clone()), "012");
    assert_eq!(
        render(
            "{{ range .items }}{{ if eq . \"b\" }}{{ break }}{{ end }}{{ . }}{{ end }}",
            d.clone()
        ),
        "a"
    );
    assert_eq!(
        render("{{ $x := .spec.name }}{{ $x }}-{{ $x }}", d.clone()),
        "n-n"
    );
    assert_eq!(render("{{ $x := 1 }}{{ $x = 2 }}{{ $x }}", d.clone()), "2");
    assert_eq!(
        render("{{ range .items }}{{ $.spec.name }}{{ end }}", d.clone()),
        "nn"
    );
    assert_eq!(render("{{ (index .items 0) }}{{ (.spec).name }}", d), "an");
}

#[test]
fn rendered_templates_are_trimmed_like_orkestra_but_literals_are_not() {
    assert_eq!(
        render("\n  {{ if true }}\n    x\n  {{ end }}\n", json!({})),
        "x"
    );
    assert_eq!(render("  literal  ", json!({})), "  literal  ");
    assert_eq!(render("a  {{- \"b\" -}}  c", json!({})), "abc");
    assert_eq!(render("{{/* a comment */}}x", json!({})), "x");
}

#[test]
fn notes_are_functions_evaluated_against_the_same_data() {
    let notes = Arc::new(
        Notes::compile([
            (
                "reconcilerEndpoint",
                "{{ if .ork.inCluster }}\n  http://svc.default.svc:8025/reconcile\n{{ else }}\n  http://localhost:8025/reconcile\n{{ end }}",
            ),
            ("host", "{{ .metadata.name }}.{{ .metadata.namespace }}.svc"),
            ("isProd", "{{ eq .spec.env \"prod\" }}"),
            ("url", "http://{{ host }}/x"),
            ("greet", "hello {{ $1 }} and {{ index $args 1 }}"),
        ])
        .expect("notes compile"),
    );
    let cr = json!({"metadata": {"name": "web", "namespace": "team"}, "spec": {"env": "prod"}});
    let t = |src: &str, in_cluster: bool| {
        let f = facts(in_cluster);
        Template::parse(src)
            .expect("parses")
            .with_notes(notes.clone())
            .render_in(&RenderContext::new(&cr).with_facts(&f))
            .expect("renders")
    };
    assert_eq!(
        t("{{ reconcilerEndpoint }}", false),
        "http://localhost:8025/reconcile"
    );
    assert_eq!(
        t("{{ reconcilerEndpoint }}", true),
        "http://svc.default.svc:8025/reconcile"
    );
    assert_eq!(t("{{ url }}", false), "http://web.team.svc/x");
    assert_eq!(t("{{ if isProd }}P{{ end }}", false), "P");
    assert_eq!(t("{{ greet \"a\" \"b\" }}", false), "hello a and b");
}

#[test]
fn a_note_cycle_is_an_error_not_a_stack_overflow() {
    let notes =
        Arc::new(Notes::compile([("a", "{{ b }}"), ("b", "{{ a }}")]).expect("notes compile"));
    let e = Template::parse("{{ a }}")
        .expect("parses")
        .with_notes(notes)
        .render(&json!({}))
        .expect_err("cycle");
    assert!(e.to_string().contains("cycle"), "{e}");
}

#[test]
fn sentinels_are_functions_of_the_event() {
    let mut s = BTreeMap::new();
    s.insert(Sentinel::GenerationChanged, true);
    let data = json!({});
    let t = Template::parse("{{ generationChanged }}/{{ labelsChanged }}").expect("parses");
    assert_eq!(
        t.render_in(&RenderContext::new(&data).with_sentinels(&s))
            .expect("renders"),
        "true/false"
    );
    assert_eq!(t.render(&data).expect("renders"), "false/false");
}

#[test]
fn ten_thousand_nested_parentheses_are_a_clear_error() {
    let src = format!("{{{{ {}1{} }}}}", "(".repeat(10_000), ")".repeat(10_000));
    let e = Template::parse(&src).expect_err("too deep");
    assert!(e.to_string().contains("nests deeper than"), "{e}");
    let ifs = format!(
        "{}x{}",
        "{{ if true }}".repeat(10_000),
        "{{ end }}".repeat(10_000)
    );
    let e = Template::parse(&ifs).expect_err("too deep");
    assert!(e.to_string().contains("nests deeper than"), "{e}");
    let ok = format!("{{{{ {}1{} }}}}", "(".repeat(20), ")".repeat(20));
    assert_eq!(render(&ok, json!({})), "1");
}

#[test]
fn runaway_renders_stop_at_the_budget() {
    let e = render_err(
        "{{ range 1000 }}{{ range 1000 }}{{ range 1000 }}x{{ end }}{{ end }}{{ end }}",
        json!({}),
    );
    assert!(e.contains("steps") || e.contains("longer than"), "{e}");
    assert!(render_err("{{ repeat \"x\" 99999999 }}", json!({})).contains("longer than"));
}

#[test]
fn broken_templates_are_rejected_at_parse_time() {
    for bad in [
        "{{ .a ",
        "{{ if .a }}x",
        "{{ end }}",
        "{{ else }}",
        "{{ .a .b }}",
        "{{ (.a }}",
        "{{ .a) }}",
        "{{ }}",
        "{{ define \"x\" }}{{ end }}",
        "{{ break }}",
        "{{ \"unterminated }}",
        "{{ .a | }}",
        "{{ 1.2.3 }}",
    ] {
        assert!(Template::parse(bad).is_err(), "{bad} should not parse");
    }
}

#[test]
fn an_unknown_function_fails_at_render_and_is_listed() {
    let t = Template::parse("{{ .a | lowr }} {{ upper (nosuch 1) }}").expect("parses");
    assert_eq!(t.functions(), ["lowr", "nosuch", "upper"]);
    assert!(
        t.render(&json!({}))
            .expect_err("unknown")
            .to_string()
            .contains("\"lowr\" not defined")
    );
}

#[test]
fn quoted_braces_inside_actions_do_not_close_them() {
    assert_eq!(render("{{ \"}}\" }}", json!({})), "}}");
    assert_eq!(render("{{ `{{x}}` }}", json!({})), "{{x}}");
}

#[test]
fn a_range_over_a_huge_count_holds_one_item_at_a_time() {
    let cr = json!({"spec": {"n": 1_000_000_000_i64}});
    assert_eq!(
        render("{{ range .spec.n }}{{ break }}{{ end }}done", cr.clone()),
        "done"
    );
    assert_eq!(
        render(
            "{{ range $i := 1000000000 }}{{ if eq $i 2 }}{{ break }}{{ end }}{{ $i }}{{ end }}",
            cr.clone()
        ),
        "01"
    );
    assert!(render_err("{{ range .spec.n }}{{ end }}", cr).contains("steps"));
}

#[test]
fn a_whole_object_reference_costs_one_step_over_any_cr() {
    let large = json!({"spec": {"list": vec!["x".repeat(100); 10_000]}});
    let started = std::time::Instant::now();
    assert_eq!(
        render(
            "{{ range 100000 }}{{ if $ }}{{ $x := . }}{{ $y := index $ \"spec\" }}{{ end }}{{ end }}ok",
            large
        ),
        "ok"
    );
    // Copying the 1 MB CR at each step took minutes; sharing it takes milliseconds.
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn work_that_grows_with_the_cr_is_charged_to_the_step_budget() {
    let t = "{{ range 1000 }}{{ $x := toJson $ }}{{ $y := printf \"%.3s\" $.spec }}{{ end }}ok";
    assert_eq!(render(t, json!({"spec": {"a": 1}})), "ok");
    let large = json!({"spec": {"list": vec!["x".repeat(100); 10_000]}});
    assert!(render_err(t, large).contains("more than 1000000 steps"));
}

#[test]
fn values_passed_on_are_the_values_go_passes_on() {
    let cr = json!({"metadata": {"name": "web", "labels": {"app": "x"}},
                    "spec": {"list": [{"a": 1}, {"a": 2}], "m": {"k": "v"}}});
    assert_eq!(
        render(
            "{{ $l := .spec.list }}{{ range $i, $e := $l }}{{ $i }}={{ $e.a }},{{ end }}",
            cr.clone()
        ),
        "0=1,1=2,"
    );
    assert_eq!(
        render(
            "{{ $v := mapValues .spec.m }}{{ index $v 0 }} {{ range $k, $x := asMap \"{\\\"b\\\": {\\\"c\\\": 3}}\" }}{{ $k }}{{ $x.c }}{{ end }}",
            cr.clone()
        ),
        "v b3"
    );
    assert_eq!(
        render(
            "{{ (labels $).app }} {{ (meta .).name }} {{ default \"d\" .spec.none }} {{ ternary true .spec.m.k 0 }} {{ get $ \"spec\" \"m\" \"k\" }}",
            cr.clone()
        ),
        "x web d v v"
    );
    assert_eq!(
        render(
            "{{ eq .spec.list .spec.list }} {{ eq (index .spec.list 0) (index .spec.list 1) }} {{ printf \"%.6s\" .metadata }}",
            cr
        ),
        "true false map[la"
    );
}

#[test]
fn bool_default_keeps_a_boolean_field_and_falls_back_when_it_is_absent_or_not_a_boolean() {
    let gate = r#"{{ boolTernary (boolDefault .spec.suspend false) "Suspended" "Active" }}"#;
    assert_eq!(render(gate, json!({"spec": {}})), "Active");
    assert_eq!(
        render(gate, json!({"spec": {"suspend": true}})),
        "Suspended"
    );
    assert_eq!(render(gate, json!({"spec": {"suspend": false}})), "Active");
    // Only a boolean is kept: the text "true" or a number is not one, so the default wins.
    let d = "{{ boolDefault .spec.suspend true }}";
    assert_eq!(render(d, json!({"spec": {"suspend": false}})), "false");
    assert_eq!(render(d, json!({"spec": {"suspend": "false"}})), "true");
    assert_eq!(render(d, json!({"spec": {"suspend": 0}})), "true");
    assert_eq!(render(d, json!({})), "true");
    assert!(
        render_err("{{ boolDefault .spec.suspend 5 }}", json!({}))
            .contains("boolDefault: 5 is not a boolean")
    );
    assert!(render_err("{{ boolDefault .spec.suspend }}", json!({})).contains("boolDefault"));
}

#[test]
fn list_len_counts_the_items_of_a_list_and_nothing_else() {
    let cr = json!({"spec": {"regions": ["us-east-1", "eu-west-1"], "none": [],
                             "name": "abc", "labels": {"a": "b"}}});
    assert_eq!(render("{{ listLen .spec.regions }}", cr.clone()), "2");
    assert_eq!(render("{{ listLen .spec.none }}", cr.clone()), "0");
    assert_eq!(render("{{ listLen .spec.absent }}", cr.clone()), "0");
    // Unlike `len`, a string or a map is not a list.
    assert_eq!(render("{{ listLen .spec.name }}", cr.clone()), "0");
    assert_eq!(render("{{ len .spec.name }}", cr.clone()), "3");
    assert_eq!(render("{{ listLen .spec.labels }}", cr.clone()), "0");
    assert_eq!(
        render("{{ if gt (listLen .spec.regions) 1 }}multi{{ end }}", cr),
        "multi"
    );
}
