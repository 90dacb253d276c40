//! An Orkestra Katalog of a remote-reconciled CRD loads unmodified (SPEC §9), and the Katalog's
//! bounds hold (SPEC §1, §11). The Katalogs here are written for these tests in Orkestra's
//! style; none is copied from Orkestra.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ork_katalog::{
    DependencyCondition, Facts, Katalog, Problem, RenderContext, Sentinel, load_file, load_str,
};
use serde_json::json;

/// A fresh folder for one test's files.
fn folder(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ork-katalog-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, text).expect("write file");
    path
}

const CRD: &str = "\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.shop.example.io
spec:
  group: shop.example.io
  scope: Namespaced
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  versions:
    - name: v1alpha1
      served: true
      storage: false
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    - name: v1beta1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
    - name: v1
      served: false
      storage: false
";

/// A remote-reconciler Katalog in Orkestra's style: metadata, notes, crdFile, crFiles,
/// setup, a templated endpoint, args, auth, payload and runtime namespace guards.
const ORKESTRA_STYLE: &str = "\
apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata:
  name: gadget-remote
  author: shop-team
  version: 2.1.0
  license: Apache-2.0
  namespace: shop
  description: >
    Gadgets, reconciled by a small HTTP service.
    Everything Kubernetes is done for it.
  tags:
    - remote
    - example

notes:
  functions:
    - name: serviceUrl
      description: where the reconciler listens
      expression: >
        {{ if .ork.inCluster }}
          http://gadget-svc.shop.svc:9000/reconcile
        {{ else }}
          http://127.0.0.1:9000/reconcile
        {{ end }}

spec:
  crds:
    gadget:
      crdFile: ./crd.yaml
      crFiles:
        - ./cr.yaml
      setup:
        - ./token.yaml
      operatorBox:
        reconcile:
          default: false
          remote:
            endpoint: \"{{ serviceUrl }}\"
            timeout: 12s
            args:
              tier: '{{ .metadata.labels.tier | default \"bronze\" }}'
              owner: \"{{ .metadata.name }}\"
              verbose: true
            auth:
              secretRef:
                name: gadget-token
                namespace: shop
                key: token
            payload:
              object:
                exclude:
                  - metadata.managedFields
            managedResources:
              - group: apps
                plural: deployments
              - group: \"\"
                plural: services
        runtime:
          allowedNamespaces:
            - shop
";

fn orkestra_folder(name: &str) -> PathBuf {
    let dir = folder(name);
    write(&dir, "crd.yaml", CRD);
    write(
        &dir,
        "cr.yaml",
        "apiVersion: shop.example.io/v1beta1\nkind: Gadget\nmetadata: {name: g}\n",
    );
    write(
        &dir,
        "token.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: gadget-token}\n",
    );
    dir
}

fn load(dir: &Path, katalog: &str) -> Result<Katalog, Vec<Problem>> {
    let path = write(dir, "katalog.yaml", katalog);
    load_file(&path).map_err(|p| p.0)
}

fn problems_of(dir: &Path, katalog: &str) -> Vec<Problem> {
    load(dir, katalog).expect_err("the Katalog is refused")
}

fn line_of(yaml: &str, needle: &str) -> usize {
    yaml.lines()
        .position(|l| l.contains(needle))
        .map(|i| i + 1)
        .expect("needle is in the yaml")
}

fn one(problems: &[Problem]) -> &Problem {
    assert_eq!(problems.len(), 1, "expected one problem, got {problems:#?}");
    &problems[0]
}

#[test]
fn an_orkestra_style_remote_katalog_loads_unmodified() {
    let dir = orkestra_folder("unmodified");
    let k = load(&dir, ORKESTRA_STYLE).expect("valid");
    let m = &k.metadata;
    assert_eq!(m.author.as_deref(), Some("shop-team"));
    assert_eq!(m.version.as_deref(), Some("2.1.0"));
    assert_eq!(m.license.as_deref(), Some("Apache-2.0"));
    assert_eq!(m.namespace.as_deref(), Some("shop"));
    assert_eq!(m.tags, ["remote", "example"]);
    assert!(
        m.description
            .as_deref()
            .is_some_and(|d| d.contains("small HTTP service"))
    );
    assert_eq!(k.notes.functions[0].name, "serviceUrl");

    let e = &k.spec.crds["gadget"];
    let t = &e.api_types;
    assert_eq!(
        (
            t.group.as_str(),
            t.version.as_str(),
            t.kind.as_str(),
            t.plural.as_str()
        ),
        ("shop.example.io", "v1beta1", "Gadget", "gadgets"),
        "apiTypes come from the CRD: the served storage version"
    );
    assert!(e.namespaced);
    assert_eq!(
        e.crd_file.as_deref(),
        Some(dir.join("./crd.yaml").as_path())
    );
    assert_eq!(e.cr_files, [dir.join("./cr.yaml")]);
    assert_eq!(e.setup[..], [dir.join("./token.yaml")]);
    assert_eq!(e.effective_allowed_namespaces(), ["shop"]);
    assert!(e.namespace_allowed("shop") && !e.namespace_allowed("default"));

    let remote = e.operator_box.reconcile.remote.as_ref().expect("remote");
    let cr = json!({"metadata": {"name": "g1", "namespace": "shop"}});
    assert_eq!(
        remote.render_endpoint(&cr).expect("renders"),
        if Facts::current().in_cluster {
            "http://gadget-svc.shop.svc:9000/reconcile"
        } else {
            "http://127.0.0.1:9000/reconcile"
        }
    );
    let in_cluster = Facts {
        in_cluster: true,
        namespace: "ork".into(),
        version: "0".into(),
    };
    let endpoint = remote.endpoint.as_ref().expect("endpoint");
    assert_eq!(
        endpoint
            .render_in(&RenderContext::new(&cr).with_facts(&in_cluster))
            .expect("renders"),
        "http://gadget-svc.shop.svc:9000/reconcile"
    );
    let args = remote.render_args(&cr).expect("args render");
    assert_eq!(args["tier"], json!("bronze"));
    assert_eq!(args["owner"], json!("g1"));
    assert_eq!(args["verbose"], json!(true));
    assert_eq!(
        remote.managed_resources[0].kind.as_deref(),
        Some("Deployment")
    );
    assert_eq!(remote.managed_resources[1].kind.as_deref(), Some("Service"));
}

#[test]
fn written_api_types_must_agree_with_the_crd_file() {
    let dir = orkestra_folder("agree");
    let with = |api: &str| {
        ORKESTRA_STYLE.replace(
            "      crdFile: ./crd.yaml\n",
            &format!("      crdFile: ./crd.yaml\n      apiTypes: {api}\n"),
        )
    };
    let ok = load(&dir, &with("{version: v1alpha1}")).expect("a served version may be chosen");
    assert_eq!(ok.spec.crds["gadget"].api_types.version, "v1alpha1");
    assert_eq!(ok.spec.crds["gadget"].api_types.kind, "Gadget");

    let yaml = with("{kind: Widget}");
    let p = problems_of(&dir, &yaml);
    assert_eq!(one(&p).path, "spec.crds.gadget.apiTypes.kind");
    assert!(
        one(&p).message.contains("\"Widget\" but"),
        "{}",
        one(&p).message
    );
    assert_eq!(one(&p).line, Some(line_of(&yaml, "apiTypes:")));

    let p = problems_of(&dir, &with("{version: v1}"));
    assert!(
        one(&p).message.contains("not served"),
        "{}",
        one(&p).message
    );

    let scoped = ORKESTRA_STYLE.replace(
        "      crdFile: ./crd.yaml\n",
        "      crdFile: ./crd.yaml\n      namespaced: false\n",
    );
    let p = problems_of(&dir, &scoped);
    assert_eq!(one(&p).path, "spec.crds.gadget.namespaced");
}

#[test]
fn missing_or_remote_files_are_problems_with_their_line() {
    let dir = folder("missing-files");
    write(&dir, "crd.yaml", CRD);
    let p = problems_of(&dir, ORKESTRA_STYLE);
    let paths: Vec<&str> = p.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        ["spec.crds.gadget.crFiles[0]", "spec.crds.gadget.setup[0]"]
    );
    assert_eq!(p[1].line, Some(line_of(ORKESTRA_STYLE, "./token.yaml")));
    assert!(p[0].message.contains("does not exist"));

    let url = ORKESTRA_STYLE.replace(
        "crdFile: ./crd.yaml",
        "crdFile: https://example.com/crd.yaml",
    );
    let p = problems_of(&orkestra_folder("url"), &url);
    assert!(
        p.iter()
            .any(|p| p.path == "spec.crds.gadget.crdFile" && p.message.contains("URL"))
    );

    let no_types = ORKESTRA_STYLE.replace("      crdFile: ./crd.yaml\n", "");
    let p = problems_of(&orkestra_folder("no-types"), &no_types);
    assert!(p.iter().any(|p| p.path == "spec.crds.gadget.apiTypes.kind"
        && p.hint.as_deref().is_some_and(|h| h.contains("crdFile"))));
}

/// A minimal valid Katalog around one entry body (indented at the entry level).
fn katalog(entry: &str) -> String {
    format!(
        "apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: t}}
spec:
  crds:
    db:
      apiTypes: {{group: t.io, version: v1, kind: Db, plural: dbs}}
      operatorBox:
        reconcile:
          default: false
          remote: {{endpoint: \"http://db.svc/reconcile\"}}
    app:
      apiTypes: {{group: t.io, version: v1, kind: App, plural: apps}}
{entry}"
    )
}

const RECONCILE: &str = "      operatorBox:
        reconcile:
          default: false
          remote:
            endpoint: \"http://app.svc/reconcile\"
";

fn ok(yaml: &str) -> Katalog {
    load_str(yaml, Path::new("k.yaml")).unwrap_or_else(|p| panic!("valid: {p}"))
}

fn refused(yaml: &str) -> Vec<Problem> {
    load_str(yaml, Path::new("k.yaml")).expect_err("refused").0
}

#[test]
fn depends_on_accepts_orkestras_three_forms() {
    for (form, want) in [
        ("[db]", DependencyCondition::Started),
        ("{db: healthy}", DependencyCondition::Healthy),
        ("{db: {condition: healthy}}", DependencyCondition::Healthy),
        ("{db: {condition: started}}", DependencyCondition::Started),
    ] {
        let k = ok(&katalog(&format!("      dependsOn: {form}\n{RECONCILE}")));
        assert_eq!(
            k.spec.crds["app"].depends_on.entries(),
            [("db".to_string(), want)],
            "{form}"
        );
    }
    let p = refused(&katalog(&format!(
        "      dependsOn: {{db: ready}}\n{RECONCILE}"
    )));
    assert!(
        one(&p)
            .hint
            .as_deref()
            .is_some_and(|h| h.contains("condition"))
    );
}

#[test]
fn description_labels_annotations_and_endpoints_are_kept() {
    let k = ok(&katalog(&format!(
        "      description: the app
      labels:
        team: \"{{{{ .spec.team | default \\\"core\\\" }}}}\"
        app.kubernetes.io/name: \"{{{{ .metadata.name }}}}\"
      annotations:
        example.io/owner: fixed
      endpoints: {{enabled: true, health: false}}
{RECONCILE}"
    )));
    let e = &k.spec.crds["app"];
    assert_eq!(e.description.as_deref(), Some("the app"));
    let (labels, annotations) = e
        .render_metadata(&json!({"metadata": {"name": "a1"}}))
        .expect("renders");
    assert_eq!(labels["team"], "core");
    assert_eq!(labels["app.kubernetes.io/name"], "a1");
    assert_eq!(annotations["example.io/owner"], "fixed");
    assert!(!e.endpoints.health_enabled());
    assert!(e.endpoints.info_enabled());

    let p = refused(&katalog(&format!(
        "      labels: {{\"bad key!\": x}}\n{RECONCILE}"
    )));
    assert!(one(&p).message.contains("not a valid label key"));
}

#[test]
fn namespace_guards_merge_entry_and_runtime_levels() {
    let k = ok(&katalog(
        "      allowedNamespaces: [team-*]
      restrictedNamespaces: [team-secret]
      operatorBox:
        runtime:
          allowedNamespaces: [\"*-sandbox\"]
          restrictedNamespaces: [kube-system]
        reconcile:
          default: false
          remote: {endpoint: \"http://app.svc/reconcile\"}
",
    ));
    let e = &k.spec.crds["app"];
    assert_eq!(e.effective_allowed_namespaces(), ["team-*", "*-sandbox"]);
    assert!(e.namespace_allowed("team-a"));
    assert!(e.namespace_allowed("x-sandbox"));
    assert!(!e.namespace_allowed("team-secret"));
    assert!(!e.namespace_allowed("default"));
    assert_eq!(e.single_namespace(), None);
    assert_eq!(
        e.watched_namespaces(),
        None,
        "a wildcard watches everywhere"
    );
    let p = refused(&katalog(&format!(
        "      allowedNamespaces: [\"a*b\"]\n{RECONCILE}"
    )));
    assert_eq!(one(&p).path, "spec.crds.app.allowedNamespaces[0]");
}

/// Exact allowed namespaces are watched one by one (so the generated RBAC can be Roles there),
/// less those a restriction excludes; a wildcard anywhere watches every namespace.
#[test]
fn exact_allowed_namespaces_are_the_watched_ones() {
    let watched = |guards: &str| {
        let k = ok(&katalog(&format!(
            "{guards}      operatorBox:
        reconcile:
          default: false
          remote: {{endpoint: \"http://app.svc/reconcile\"}}
"
        )));
        k.spec.crds["app"].watched_namespaces()
    };
    let names = |n: &[&str]| Some(n.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        watched("      allowedNamespaces: [a, b]\n"),
        names(&["a", "b"])
    );
    assert_eq!(
        watched("      allowedNamespaces: [a, b, c]\n      restrictedNamespaces: [\"b*\"]\n"),
        names(&["a", "c"])
    );
    assert_eq!(watched("      allowedNamespaces: [a, \"team-*\"]\n"), None);
    assert_eq!(watched("      restrictedNamespaces: [kube-system]\n"), None);
    assert_eq!(
        watched("      allowedNamespaces: [a]\n      restrictedNamespaces: [a]\n"),
        None,
        "nothing left: as without guards"
    );
}

const GATED: &str = "      operatorBox:
        preReconcile:
          sentinels: [generationChanged, finalizersChanged]
          enqueueGate:
            sentinels: [finalizersChanged]
            failPolicy: closed
          reconcileGate:
            when:
              - field: \"{{ generationChanged }}\"
                equals: \"true\"
              - field: spec.tier
                in: \"gold,silver\"
            or:
              - field: spec.replicas
                between: \"1,5\"
              - field: spec.replicas
                greaterThan: \"10\"
        reconcile:
          default: false
          remote: {endpoint: \"http://app.svc/reconcile\"}
";

#[test]
fn orkestras_gate_forms_load_and_evaluate() {
    let k = ok(&katalog(GATED));
    let pre = &k.spec.crds["app"].operator_box.pre_reconcile;
    let gate = pre.reconcile_gate.as_ref().expect("gate");
    let checks: Vec<_> = gate
        .when
        .iter()
        .chain(&gate.or)
        .map(|c| c.compile().expect("compiles"))
        .collect();
    let mut s = BTreeMap::new();
    s.insert(Sentinel::GenerationChanged, true);
    let cr = json!({"spec": {"tier": "gold", "replicas": 3}});
    assert!(checks.iter().take(3).all(|c| c.holds(&cr, &s)));
    assert!(!checks[3].holds(&cr, &s));
    let enqueue = pre.enqueue_gate.as_ref().expect("gate");
    assert_eq!(enqueue.sentinels, [Sentinel::FinalizersChanged]);
    assert_eq!(enqueue.fail_policy, ork_katalog::FailPolicy::Closed);
}

#[test]
fn sentinels_must_be_declared_and_stay_in_gates() {
    let undeclared = katalog(&GATED.replace(
        "sentinels: [generationChanged, finalizersChanged]",
        "sentinels: [labelsChanged]",
    ));
    let p = refused(&undeclared);
    let messages: Vec<&str> = p.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "sentinel \"finalizersChanged\" is not declared",
            "sentinel \"generationChanged\" is not declared"
        ]
    );
    assert_eq!(
        p[1].line,
        Some(line_of(&undeclared, "{{ generationChanged }}"))
    );

    let outside = katalog(
        "      operatorBox:
        preReconcile: {sentinels: [generationChanged]}
        reconcile:
          default: false
          remote: {endpoint: \"http://app.svc/{{ generationChanged }}\"}
",
    );
    assert!(
        one(&refused(&outside))
            .message
            .contains("only known in preReconcile gates")
    );

    let all = Sentinel::ALL
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ");
    assert_eq!(Sentinel::ALL.len(), 15, "Orkestra's 14 and specChanged");
    ok(&katalog(&format!(
        "      operatorBox:
        preReconcile:
          sentinels: [{all}]
          reconcileGate: {{sentinels: [{all}]}}
        reconcile:
          default: false
          remote: {{endpoint: \"http://app.svc/reconcile\"}}
"
    )));
}

#[test]
fn notes_are_checked_where_they_are_declared_and_used() {
    let with_notes = |notes: &str, endpoint: &str| {
        format!(
            "{}notes:\n  functions:\n{notes}",
            katalog(&RECONCILE.replace("http://app.svc/reconcile", endpoint))
        )
    };
    let k = ok(&with_notes(
        "    - {name: base, expression: \"http://app.svc\"}\n    - {name: url, expression: \"{{ base }}/reconcile\"}\n",
        "{{ url }}",
    ));
    let remote = k.spec.crds["app"]
        .operator_box
        .reconcile
        .remote
        .as_ref()
        .expect("remote");
    assert_eq!(
        remote.render_endpoint(&json!({})).expect("renders"),
        "http://app.svc/reconcile"
    );

    let p = refused(&with_notes(
        "    - {name: url, expression: \"x\"}\n",
        "{{ urll }}",
    ));
    assert_eq!(
        one(&p).path,
        "spec.crds.app.operatorBox.reconcile.remote.endpoint"
    );
    assert_eq!(one(&p).hint.as_deref(), Some("did you mean \"url\"?"));

    let p = refused(&with_notes(
        "    - {name: default, expression: \"x\"}\n",
        "http://a/b",
    ));
    assert!(
        one(&p)
            .hint
            .as_deref()
            .is_some_and(|h| h.contains("shadow: true"))
    );
    ok(&with_notes(
        "    - {name: default, expression: \"x\", shadow: true}\n",
        "http://a/b",
    ));

    let p = refused(&with_notes(
        "    - {name: a, expression: \"{{ b }}\"}\n    - {name: b, expression: \"{{ a }}\"}\n",
        "http://a/b",
    ));
    assert_eq!(p.len(), 2, "{p:#?}");
    assert!(p[0].message.contains("calls itself through b"));

    let p = refused(&with_notes(
        "    - {name: r, expression: \"{{ randomAlphanumeric 8 }}\"}\n",
        "http://a/b",
    ));
    assert!(
        one(&p)
            .message
            .contains("Orkestra note ork does not provide")
    );

    let p = refused(&with_notes(
        "    - {name: r, expression: x}\n  include: ./notes.yaml\n",
        "http://a/b",
    ));
    assert_eq!(one(&p).message, "\"include\" is not supported by ork");
}

#[test]
fn the_remote_block_takes_orkestras_type_and_protocol() {
    for (key, value) in [("type", "http"), ("protocol", "http")] {
        ok(&katalog(&format!(
            "{RECONCILE}            {key}: {value}\n"
        )));
    }
    let p = refused(&katalog(&format!("{RECONCILE}            type: grpc\n")));
    assert!(one(&p).message.contains("unsupported transport \"grpc\""));
}

#[test]
fn managed_resources_by_kind_api_version_or_plural() {
    let k = ok(&katalog(&format!(
        "{RECONCILE}            managedResources:
              - kind: Deployment
              - {{apiVersion: v1, kind: ConfigMap}}
              - {{apiVersion: batch/v1, kind: CronJob}}
              - {{group: networking.k8s.io, plural: ingresses}}
              - {{apiVersion: t.io/v1, kind: Db}}
              - {{apiVersion: other.io/v2, kind: Gizmo, namespace: tools}}
"
    )));
    let m = &k.spec.crds["app"]
        .operator_box
        .reconcile
        .remote
        .as_ref()
        .expect("remote")
        .managed_resources;
    let seen: Vec<(&str, &str, Option<&str>)> = m
        .iter()
        .map(|m| (m.group.as_str(), m.plural.as_str(), m.kind.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("apps", "deployments", Some("Deployment")),
            ("", "configmaps", Some("ConfigMap")),
            ("batch", "cronjobs", Some("CronJob")),
            ("networking.k8s.io", "ingresses", Some("Ingress")),
            ("t.io", "dbs", Some("Db")),
            ("other.io", "", Some("Gizmo")),
        ]
    );
    assert_eq!(m[1].version.as_deref(), Some("v1"));
    assert!(m[5].needs_discovery());
    assert_eq!(m[5].namespaces, ["tools"]);
    assert!(k.notices.iter().any(|n| {
        n.message
            .contains("other.io/Gizmo is found through discovery")
    }));

    for (entry, says) in [
        ("{kind: Gizmo}", "not a built-in Kubernetes kind"),
        ("{group: x.io}", "give plural (or kind)"),
        (
            "{apiVersion: apps/v1, group: batch, kind: Job}",
            "does not match apiVersion",
        ),
        ("{kind: Deployment, plural: deploys}", "not \"deploys\""),
    ] {
        let p = refused(&katalog(&format!(
            "{RECONCILE}            managedResources: [{entry}]\n"
        )));
        assert!(
            one(&p).message.contains(says),
            "{entry}: {}",
            one(&p).message
        );
        assert_eq!(
            one(&p).path,
            "spec.crds.app.operatorBox.reconcile.remote.managedResources[0]"
        );
    }
}

#[test]
fn a_templated_secret_name_is_refused() {
    let yaml = katalog(&format!(
        "{RECONCILE}            auth:
              secretRef: {{name: \"{{{{ .metadata.name }}}}-token\", key: token, namespace: apps}}
"
    ));
    let problems =
        load_str(&yaml, Path::new("k.yaml")).expect_err("a CR must not choose the Secret");
    let p = problems
        .0
        .iter()
        .find(|p| p.path.ends_with("auth.secretRef.name"))
        .expect("the field is named");
    assert!(p.message.contains("cannot be a template"), "{}", p.message);
    assert_eq!(p.line, Some(line_of(&yaml, "secretRef:")));
}

#[test]
fn children_payload_per_resource_options() {
    let k = ok(&katalog(&format!(
        "{RECONCILE}            managedResources: [{{kind: Deployment}}, {{kind: Service}}, {{kind: ConfigMap}}]
            payload:
              children:
                exclude: [metadata.managedFields]
                resources:
                  deployment:
                    exclude: [spec.template.metadata.annotations]
                  service: {{}}
                  configmap:
                    exclude: []
"
    )));
    let c = &k.spec.crds["app"]
        .operator_box
        .reconcile
        .remote
        .as_ref()
        .expect("remote")
        .payload
        .children;
    assert_eq!(
        c.exclude_for("deployment"),
        Some(&["spec.template.metadata.annotations".to_string()][..])
    );
    assert_eq!(
        c.exclude_for("service"),
        Some(&["metadata.managedFields".to_string()][..])
    );
    assert_eq!(c.exclude_for("configmap"), Some(&[][..]));
    assert_eq!(c.exclude_for("secret"), None);

    let p = refused(&katalog(&format!(
        "{RECONCILE}            managedResources: [{{kind: Deployment}}]
            payload: {{children: {{resources: {{secret: {{}}}}}}}}
"
    )));
    assert!(
        one(&p)
            .message
            .contains("\"secret\" is not a managed resource")
    );
}

#[test]
fn queue_takes_a_scalar_retry_backoff_and_max_attempts() {
    let k = ok(&katalog(
        "      operatorBox:
        reconcile:
          default: false
          queue: {retryBackoff: 10m, maxAttempts: 4}
          remote: {endpoint: \"http://app.svc/reconcile\"}
",
    ));
    let q = &k.spec.crds["app"].operator_box.reconcile.queue;
    assert_eq!(q.retry_backoff.initial.get().as_secs(), 600);
    assert_eq!(
        q.retry_backoff.max.get().as_secs(),
        600,
        "max grows to the initial delay"
    );
    assert_eq!(q.max_attempts(), Some(4));
    let k = ok(&katalog(
        "      operatorBox:
        reconcile:
          default: false
          queue: {retryBackoff: {initial: 100ms, max: 10m, multiplier: 1.5, maxAttempts: 5}}
          remote: {endpoint: \"http://app.svc/reconcile\"}
",
    ));
    assert_eq!(
        k.spec.crds["app"]
            .operator_box
            .reconcile
            .queue
            .max_attempts(),
        Some(5)
    );

    let yaml = katalog(
        "      operatorBox:
        reconcile:
          default: false
          queue:
            retryBackoff: {initial: 1h, max: 1m, jitter: 0.1}
            maxAttempts: 0
          remote: {endpoint: \"http://app.svc/reconcile\"}
",
    );
    let p = refused(&yaml);
    assert!(
        p.iter().any(|p| p.path.ends_with("retryBackoff.jitter")),
        "{p:#?}"
    );
}

#[test]
fn durations_are_bounded_and_written_in_go_syntax() {
    for (value, says) in [
        ("5 seconds", "write 5s"),
        ("9000h", "longer than one year"),
        ("2d", "24h is one day"),
        ("99999999999999999999h", "too large"),
    ] {
        let yaml = katalog(&format!("{RECONCILE}            timeout: {value}\n"));
        let p = refused(&yaml);
        let text = one(&p).to_string();
        assert!(text.contains(says), "{value}: {text}");
        assert_eq!(
            one(&p).path,
            "spec.crds.app.operatorBox.reconcile.remote.timeout"
        );
        assert_eq!(one(&p).line, Some(line_of(&yaml, "timeout:")));
    }
    ok(&katalog(&format!(
        "{RECONCILE}            timeout: 2h45m30.5s\n"
    )));
}

#[test]
fn rate_limits_must_be_sane() {
    for (rl, path) in [
        ("{qps: 0}", "rateLimit.qps"),
        ("{qps: 0.0001}", "rateLimit.qps"),
        ("{qps: 2000000}", "rateLimit.qps"),
        ("{qps: 5, burst: 0}", "rateLimit.burst"),
    ] {
        let p = refused(&katalog(&format!(
            "{RECONCILE}            rateLimit: {rl}\n"
        )));
        assert!(one(&p).path.ends_with(path), "{rl}: {:?}", one(&p));
    }
    assert!(
        !refused(&katalog(&format!(
            "{RECONCILE}            rateLimit: {{qps: .nan}}\n"
        )))
        .is_empty()
    );
    ok(&katalog(&format!(
        "{RECONCILE}            rateLimit: {{qps: 0.001, burst: 1}}\n"
    )));
}

#[test]
fn an_oversized_katalog_is_refused_before_parsing() {
    let big = format!(
        "{}\n# {}\n",
        katalog(RECONCILE),
        "x".repeat(5 * 1024 * 1024)
    );
    let started = std::time::Instant::now();
    let p = refused(&big);
    assert!(
        one(&p).message.contains("at most 4 MiB"),
        "{}",
        one(&p).message
    );
    let dir = folder("big");
    let path = write(&dir, "katalog.yaml", &big);
    let p = load_file(&path).expect_err("refused").0;
    assert!(one(&p).message.contains("at most 4 MiB"));
    assert!(started.elapsed().as_secs() < 5);
}

#[test]
fn a_deeply_nested_katalog_is_refused_with_its_line() {
    let mut deep = String::from("apiVersion: orkestra.orkspace.io/v1\nkind: Katalog\nspec:\n");
    for i in 0..2000 {
        deep.push_str(&format!("{}k{i}:\n", " ".repeat(i + 1)));
    }
    let p = refused(&deep);
    assert!(
        one(&p).message.contains("nests 41 levels deep"),
        "{}",
        one(&p).message
    );
    assert_eq!(one(&p).line, Some(3 + 40));

    let flow = format!(
        "{}{}",
        "a: ".to_string() + &"[".repeat(100_000),
        "]".repeat(100_000)
    );
    let p = refused(&flow);
    assert!(one(&p).message.contains("levels deep"));

    // Brackets inside plain scalars and quotes are text, not nesting.
    ok(&katalog(&format!(
        "      description: use {{ and [ freely, even {{{{ here\n{RECONCILE}"
    )));
    let many: String = (0..60)
        .map(|i| format!("        k{i}: \"[ {{ [ {{\"\n"))
        .collect();
    ok(&katalog(&format!("      annotations:\n{many}{RECONCILE}")));
}

#[test]
fn generic_reconciler_fields_are_still_not_supported() {
    for (field, yaml) in [
        (
            "onCreate",
            "      operatorBox:\n        reconcile:\n          default: false\n          onCreate: {}\n          remote: {endpoint: \"http://a/b\"}\n",
        ),
        (
            "autoscale",
            "      operatorBox:\n        runtime: {autoscale: {}}\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://a/b\"}\n",
        ),
        (
            "emit",
            "      operatorBox:\n        emit: {}\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://a/b\"}\n",
        ),
        (
            "admission",
            "      admission: {}\n      operatorBox:\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://a/b\"}\n",
        ),
        (
            "time",
            "      operatorBox:\n        preReconcile:\n          reconcileGate:\n            when: [{time: {after: \"08:00\"}}]\n        reconcile:\n          default: false\n          remote: {endpoint: \"http://a/b\"}\n",
        ),
    ] {
        let p = refused(&katalog(yaml));
        assert!(
            p.iter()
                .any(|p| p.message == format!("\"{field}\" is not supported by ork")),
            "{field}: {p:#?}"
        );
    }
}

#[test]
fn the_json_schema_describes_orkestras_fields() {
    let schema = serde_json::to_string(&schemars::schema_for!(Katalog)).expect("schema");
    for field in [
        "notes",
        "crdFile",
        "crFiles",
        "setup",
        "allowedNamespaces",
        "restrictedNamespaces",
        "endpoints",
        "failPolicy",
        "maxAttempts",
        "apiVersion",
        "resources",
        "author",
        "license",
    ] {
        assert!(
            schema.contains(&format!("\"{field}\"")),
            "{field} is in the schema"
        );
    }
    let k = ok(&katalog(RECONCILE));
    let round = serde_json::to_value(&k).expect("serialises");
    assert_eq!(
        round["spec"]["crds"]["app"]["operatorBox"]["reconcile"]["queue"]["retryBackoff"]["initial"],
        "1s"
    );
}

/// Errors Python's `jsonschema` finds in `instance`; `None` when that validator is missing.
fn schema_errors(schema: &serde_json::Value, instance: &serde_json::Value) -> Option<String> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let program = "import json, sys\nfrom jsonschema import Draft202012Validator\nschema, instance = json.load(sys.stdin)\nDraft202012Validator.check_schema(schema)\nfor e in Draft202012Validator(schema).iter_errors(instance):\n    print(f'{list(e.absolute_path)}: {e.message}')\n";
    let mut child = Command::new("python3")
        .args(["-c", program])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child
        .stdin
        .take()?
        .write_all(json!([schema, instance]).to_string().as_bytes())
        .ok()?;
    let out = child.wait_with_output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn the_json_schema_accepts_orkestra_style_katalogs() {
    let schema = serde_json::to_value(schemars::schema_for!(Katalog)).expect("schema");
    for yaml in [
        ORKESTRA_STYLE.to_string(),
        katalog(GATED),
        katalog(&format!(
            "{RECONCILE}            managedResources: [{{kind: Deployment}}, {{apiVersion: v1, kind: Secret}}]
          queue: {{retryBackoff: 5s, maxAttempts: 3}}
"
        )),
    ] {
        let instance: serde_json::Value = serde_saphyr::from_str(&yaml).expect("YAML");
        let Some(errors) = schema_errors(&schema, &instance) else {
            return; // no Python jsonschema here; `cargo xtask test` installs it
        };
        assert_eq!(errors, "", "{yaml}");
    }
}

/// [`ORKESTRA_STYLE`] as inrun writes it today (Orkestra renamed): its `apiVersion`, its
/// `kind` and its `.inrun` template keys.
fn inrun_style() -> String {
    let text = ORKESTRA_STYLE
        .replace(
            "apiVersion: orkestra.orkspace.io/v1\n",
            "apiVersion: inrun.dev/v1\n",
        )
        .replace("kind: Katalog\n", "kind: Catalog\n")
        .replace("{{ if .ork.inCluster }}", "{{ if .inrun.inPod }}");
    assert!(
        text.starts_with("apiVersion: inrun.dev/v1\nkind: Catalog\n")
            && text.contains(".inrun.inPod"),
        "the inrun form was made"
    );
    text
}

#[test]
fn an_inrun_catalog_loads_as_the_same_katalog_and_its_templates_read_inrun_facts() {
    let dir = orkestra_folder("inrun");
    let orkestra = load(&dir, ORKESTRA_STYLE).expect("the Orkestra form is valid");
    let inrun = load(&dir, &inrun_style()).expect("the inrun form is valid");
    assert_eq!(inrun.api_version, "inrun.dev/v1");
    assert_eq!(inrun.kind, "Catalog");
    let entry = |k: &Katalog| {
        let mut v = serde_json::to_value(&k.spec.crds["gadget"]).expect("serialises");
        v.as_object_mut().expect("an object").remove("operatorBox");
        v
    };
    assert_eq!(entry(&inrun), entry(&orkestra), "the same entry");

    let remote = inrun.spec.crds["gadget"]
        .operator_box
        .reconcile
        .remote
        .as_ref()
        .expect("remote");
    let endpoint = remote.endpoint.as_ref().expect("endpoint");
    let cr = json!({"metadata": {"name": "g1", "namespace": "shop"}});
    let facts = |in_cluster| Facts {
        in_cluster,
        namespace: "ork".into(),
        version: "0".into(),
    };
    for (in_cluster, url) in [
        (true, "http://gadget-svc.shop.svc:9000/reconcile"),
        (false, "http://127.0.0.1:9000/reconcile"),
    ] {
        let f = facts(in_cluster);
        assert_eq!(
            endpoint
                .render_in(&RenderContext::new(&cr).with_facts(&f))
                .expect("renders"),
            url,
            ".inrun.inPod is {in_cluster}"
        );
    }
}

#[test]
fn another_api_version_or_kind_is_still_refused_with_both_forms_named() {
    let dir = orkestra_folder("other-version");
    let text = inrun_style().replace("apiVersion: inrun.dev/v1\n", "apiVersion: inrun.dev/v2\n");
    let p = problems_of(&dir, &text);
    let p = one(&p);
    assert_eq!(p.path, "apiVersion");
    assert_eq!(p.line, Some(1));
    assert_eq!(p.message, "unsupported apiVersion \"inrun.dev/v2\"");
    assert_eq!(
        p.hint.as_deref(),
        Some("use `apiVersion: orkestra.orkspace.io/v1` (or inrun's `inrun.dev/v1`)")
    );
    let text = inrun_style().replace("kind: Catalog\n", "kind: Komposer\n");
    let p = problems_of(&dir, &text);
    assert_eq!(one(&p).path, "kind");
    assert_eq!(one(&p).message, "kind \"Komposer\" is not a Katalog");
}

/// Upstream's own remote example, both formats, as copied into `../shared/peers` (read, not
/// copied into this repository).
fn upstream_remote_example() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/peers/orkestra/examples/reconcilers/remote");
    assert!(
        dir.join("catalog.yaml").is_file() && dir.join("katalog.yaml").is_file(),
        "upstream's files are in {} (see ../shared/peers/README.md)",
        dir.display()
    );
    dir
}

#[test]
fn upstream_s_remote_example_loads_unchanged_in_both_formats() {
    let dir = upstream_remote_example();
    let katalog = load_file(&dir.join("katalog.yaml")).expect("the Orkestra form loads");
    let catalog = load_file(&dir.join("catalog.yaml")).expect("the inrun form loads");
    assert_eq!(
        (catalog.api_version.as_str(), catalog.kind.as_str()),
        ("inrun.dev/v1", "Catalog")
    );
    let spec = |k: &Katalog| serde_json::to_value(&k.spec.crds["webapp"].api_types).expect("json");
    assert_eq!(spec(&catalog), spec(&katalog));
    assert_eq!(
        catalog.spec.crds["webapp"].setup,
        katalog.spec.crds["webapp"].setup
    );
    let endpoint = |k: &Katalog, in_cluster| {
        let f = Facts {
            in_cluster,
            namespace: "default".into(),
            version: "0".into(),
        };
        let remote = k.spec.crds["webapp"]
            .operator_box
            .reconcile
            .remote
            .clone()
            .expect("remote");
        remote
            .endpoint
            .expect("endpoint")
            .render_in(&RenderContext::new(&json!({})).with_facts(&f))
            .expect("renders")
            .trim()
            .to_string()
    };
    for in_cluster in [true, false] {
        assert_eq!(
            endpoint(&catalog, in_cluster),
            endpoint(&katalog, in_cluster)
        );
    }
    assert_eq!(endpoint(&catalog, false), "http://localhost:8025/reconcile");
    assert_eq!(
        endpoint(&catalog, true),
        "http://webapp-reconciler.default.svc.cluster.local:8025/reconcile"
    );
}

#[test]
fn camel_case_entry_names_load_as_orkestra_takes_them() {
    let dir = orkestra_folder("camel");
    for name in ["webApp", "declarativeApp", "hybridApp", "Web2", "web-app"] {
        let text = ORKESTRA_STYLE.replace("    gadget:\n", &format!("    {name}:\n"));
        let k = load(&dir, &text).unwrap_or_else(|p| panic!("{name}: {p:#?}"));
        assert!(k.spec.crds.contains_key(name), "{name}");
    }
    for (name, message) in [
        (
            "web_app",
            "entry name \"web_app\" is not a name of letters, digits and `-`",
        ),
        (
            "-web",
            "entry name \"-web\" is not a name of letters, digits and `-`",
        ),
        ("web.app", "entry name \"web.app\" has a dot"),
    ] {
        let text = ORKESTRA_STYLE.replace("    gadget:\n", &format!("    {name}:\n"));
        let p = problems_of(&dir, &text);
        let p = one(&p);
        assert_eq!(p.message, message);
        assert_eq!(
            p.line,
            Some(line_of(&text, &format!("    {name}:"))),
            "{name}"
        );
        assert!(p.hint.is_some(), "{name}");
    }
}

/// [`ORKESTRA_STYLE`] with `setup` (YAML at the entry's indentation) in place of its list.
fn with_setup(setup: &str) -> String {
    let text = ORKESTRA_STYLE.replace("      setup:\n        - ./token.yaml\n", setup);
    assert!(text.contains(setup), "the setup was put in");
    text
}

#[test]
fn setup_in_orkestra_s_map_form_loads_with_its_waits() {
    let dir = orkestra_folder("setup-map");
    let text = with_setup(
        "      setup:
        apply:
          - ./cr.yaml
          - path: ./token.yaml
            wait:
              - {kind: Secret, name: gadget-token, namespace: shop, timeout: 15s}
        wait:
          - kind: Deployment
            name: gadget-db
            ready: true
",
    );
    let k = load(&dir, &text).expect("valid");
    let setup = &k.spec.crds["gadget"].setup;
    assert_eq!(setup[..], [dir.join("./cr.yaml"), dir.join("./token.yaml")]);
    assert!(setup.waits_after(0).is_empty());
    let secret = &setup.waits_after(1)[0];
    assert_eq!(
        (
            secret.kind.as_str(),
            secret.name.as_str(),
            secret.namespace.as_deref()
        ),
        ("Secret", "gadget-token", Some("shop"))
    );
    assert_eq!(secret.timeout.get(), std::time::Duration::from_secs(15));
    let db = &setup.wait[0];
    assert!(db.ready && db.namespace.is_none());
    assert_eq!(
        db.timeout.get(),
        std::time::Duration::from_secs(30),
        "Orkestra's default"
    );
}

#[test]
fn what_ork_cannot_do_in_setup_is_refused_at_its_line_with_what_to_do() {
    let dir = orkestra_folder("setup-refused");
    let text = with_setup(
        "      setup:
        apply: [./token.yaml]
        helm:
          - {repo: https://charts.example.io, chart: db}
",
    );
    let p = problems_of(&dir, &text);
    let p = one(&p);
    assert_eq!(p.path, "spec.crds.gadget.setup.helm");
    assert_eq!(p.line, Some(line_of(&text, "helm:")));
    assert_eq!(p.message, "\"helm\" is not supported by ork");
    assert!(
        p.hint.as_deref().is_some_and(|h| h.contains("setup.wait")),
        "{p:?}"
    );

    let text = with_setup(
        "      setup:
        wait:
          - {kind: Secret, name: t, timeout: soon}
",
    );
    let p = problems_of(&dir, &text);
    let p = one(&p);
    assert_eq!(p.path, "spec.crds.gadget.setup.wait[0].timeout");
    assert_eq!(p.line, Some(line_of(&text, "timeout: soon")));

    let text = with_setup("      setup: 5\n");
    let p = problems_of(&dir, &text);
    let p = one(&p);
    assert_eq!(p.path, "spec.crds.gadget.setup");
    assert_eq!(p.line, Some(line_of(&text, "setup: 5")));
    assert!(
        p.message
            .contains("expected a list of files, or {apply: [files], wait: [objects]}"),
        "{}",
        p.message
    );

    let text = with_setup("      setup:\n        apply:\n          - ./missing.yaml\n");
    let p = problems_of(&dir, &text);
    assert_eq!(one(&p).path, "spec.crds.gadget.setup.apply[0]");
    assert_eq!(one(&p).line, Some(line_of(&text, "./missing.yaml")));
}

#[test]
fn typed_mode_fields_are_refused_as_not_supported_with_what_to_do() {
    let dir = orkestra_folder("typed");
    let text = ORKESTRA_STYLE.replace(
        "      crdFile: ./crd.yaml\n",
        "      crdFile: ./crd.yaml\n      apiTypes:\n        object: Gadget\n        location: ./api/v1\n",
    );
    let p = problems_of(&dir, &text);
    assert_eq!(p.len(), 2, "{p:#?}");
    for (p, field) in p.iter().zip(["object", "location"]) {
        assert_eq!(p.path, format!("spec.crds.gadget.apiTypes.{field}"));
        assert_eq!(p.line, Some(line_of(&text, &format!("{field}: "))));
        assert_eq!(p.message, format!("\"{field}\" is not supported by ork"));
        assert!(
            p.hint.as_deref().is_some_and(|h| h.contains("typed mode")),
            "{p:?}"
        );
    }
}

/// Orkestra's time-window and cron helpers are named as Orkestra notes ork does not provide,
/// with why, not as unknown functions.
#[test]
fn orkestras_time_and_cron_helpers_are_refused_by_name() {
    let p = refused(&katalog(
        "      operatorBox:
        reconcile:
          default: false
          remote:
            endpoint: \"http://app.svc/reconcile\"
            args:
              next: '{{ nextCron \"0 9 * * 1-5\" }}'
              open: '{{ and weekday (timeInWindow \"09:00\" \"18:00\") }}'
",
    ));
    let said: Vec<String> = p
        .iter()
        .map(|p| format!("{} {:?}", p.message, p.hint))
        .collect();
    for name in ["nextCron", "weekday", "timeInWindow"] {
        assert!(
            said.iter().any(|s| s.contains(&format!(
                "\"{name}\" is an Orkestra note ork does not provide"
            ))),
            "{name}: {said:?}"
        );
    }
    assert!(said.iter().all(|s| !s.contains("not defined")), "{said:?}");
}
