//! `ork conform` as a service author runs it, without a cluster (the CRD from `crdFile` or
//! `--crd`): a service with planted faults (tests/faulty-service/service.py) fails with each
//! fault named, and the examples' real services pass. Every service is a real HTTP server on
//! 127.0.0.1; nothing here reads a kubeconfig.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use anyhow::{Context, Result, bail};
use common::example::{Reconciler, example, katalog_on_port};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ork-conform-{name}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("home")).expect("temp dir");
    dir
}

/// `ork ARGS` with no kubeconfig to be found.
fn ork(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ork"))
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", dir.join("home"))
        .output()
        .expect("ork runs")
}

use common::output_text as text;

/// A Python service started with `PORT=0`; its first line names the port it bound. Killed
/// when dropped.
struct Python {
    child: Child,
    port: u16,
}

impl Python {
    fn start(script: &Path) -> Result<Python> {
        let mut child = Command::new("python3")
            .arg(script)
            .env("PORT", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting python3 {}", script.display()))?;
        let stdout = child.stdout.take().context("the service's stdout")?;
        let mut lines = BufReader::new(stdout);
        let mut first = String::new();
        lines.read_line(&mut first)?;
        // The rest is read (and dropped) as it comes: a closed pipe would fail its prints.
        std::thread::spawn(move || std::io::copy(&mut lines, &mut std::io::sink()));
        let Some(port) = first
            .rsplit_once("127.0.0.1:")
            .and_then(|(_, p)| p.trim().parse::<u16>().ok())
        else {
            let _ = child.kill();
            bail!("{} did not say its port: {first:?}", script.display());
        };
        Ok(Python { child, port })
    }
}

impl Drop for Python {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn faulty_service() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/faulty-service")
}

/// A Katalog whose entry `gadget` calls the faulty service on `port`: finalize calls on, a
/// timeout of 1s, two workers, the CRD from `crdFile`.
fn faulty_katalog(dir: &Path, port: u16) -> Result<PathBuf> {
    let katalog = dir.join("katalog.yaml");
    std::fs::write(
        &katalog,
        format!(
            r#"apiVersion: orkestra.orkspace.io/v1
kind: Katalog
metadata: {{name: faulty}}
spec:
  crds:
    gadget:
      crdFile: {crd}
      operatorBox:
        reconcile:
          default: false
          workers: 2
          remote:
            endpoint: "http://127.0.0.1:{port}/reconcile"
            timeout: 1s
            finalize: true
            managedResources:
              - {{group: "", version: v1, plural: configmaps, kind: ConfigMap}}
"#,
            crd = faulty_service().join("crd.yaml").display()
        ),
    )?;
    Ok(katalog)
}

/// The report's line for `check`, and the lines under it.
fn section<'a>(shown: &'a str, check: &str) -> Vec<&'a str> {
    let mut lines = shown
        .lines()
        .skip_while(|l| !l.contains(&format!(" {check}: ")));
    let mut out: Vec<&str> = lines.next().into_iter().collect();
    out.extend(lines.take_while(|l| l.starts_with("    ")));
    out
}

#[test]
fn each_planted_fault_of_a_non_conforming_service_is_reported_by_name_and_fails_the_run()
-> Result<()> {
    let dir = temp("faulty");
    let service = Python::start(&faulty_service().join("service.py"))?;
    let katalog = faulty_katalog(&dir, service.port)?;
    let junit = dir.join("junit.xml");
    let out = ork(
        &dir,
        &[
            "conform",
            "-k",
            &katalog.to_string_lossy(),
            "--entry",
            "gadget",
            "--junit",
            &junit.to_string_lossy(),
        ],
    );
    let shown = text(&out);
    assert!(!out.status.success(), "a fault fails the run: {shown}");
    // Its answers themselves are valid protocol.
    assert!(
        shown.contains("PASS protocol: every field of the schema: default/conform-full: the answer follows protocol v1"),
        "{shown}"
    );
    let idempotence = section(&shown, "idempotence").join("\n");
    assert!(
        idempotence.starts_with("FAIL idempotence: the same request twice got different answers"),
        "{shown}"
    );
    assert!(
        idempotence.contains("resources[0].data.served: expected \""),
        "the field, the expected and the found value: {idempotence}"
    );
    let finalizing = section(&shown, "finalizing").join("\n");
    assert!(
        finalizing.starts_with(
            "FAIL finalizing: a request with prepared.finalizing: true was not finalized"
        ),
        "{shown}"
    );
    assert!(
        finalizing.contains("finalized: expected true, found it absent"),
        "{finalizing}"
    );
    let unknown = section(&shown, "unknown request fields").join("\n");
    assert!(
        unknown.starts_with("FAIL unknown request fields: a request with the unknown fields orkConformUnknown and prepared.orkConformUnknown broke the answer"),
        "{shown}"
    );
    assert!(
        unknown.contains("HTTP 500") || unknown.contains("500"),
        "{unknown}"
    );
    let concurrency = section(&shown, "concurrency").join("\n");
    assert!(
        concurrency.starts_with("FAIL concurrency: 2 requests for different keys at once"),
        "{shown}"
    );
    assert!(
        concurrency.contains("default/conform-concurrent-1 with 2 in flight: no answer:")
            && concurrency.contains("timed out")
            && concurrency.contains("the entry's timeout is 1s"),
        "{concurrency}"
    );
    let xml = std::fs::read_to_string(&junit)?;
    assert!(
        xml.contains("<testcase classname=\"conform gadget\" name=\"idempotence\""),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<failure message=\"a request with prepared.finalizing: true was not finalized"
        ),
        "{xml}"
    );
    Ok(())
}

#[test]
fn the_webapp_example_service_conforms() -> Result<()> {
    let dir = temp("webapp");
    let webapp = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/webapp");
    let service = Python::start(&webapp.join("reconciler.py"))?;
    let katalog = dir.join("katalog.yaml");
    let text_of = std::fs::read_to_string(webapp.join("katalog.yaml"))?;
    std::fs::write(
        &katalog,
        text_of.replace("127.0.0.1:8025", &format!("127.0.0.1:{}", service.port)),
    )?;
    let out = ork(
        &dir,
        &[
            "conform",
            "-k",
            &katalog.to_string_lossy(),
            "--entry",
            "webapp",
            "--crd",
            &webapp.join("crd.yaml").to_string_lossy(),
        ],
    );
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    for check in [
        "protocol: every field of the schema",
        "idempotence",
        "unknown request fields",
        "large object",
        "determinism",
        "concurrency",
    ] {
        assert!(
            shown.contains(&format!("PASS {check}: ")),
            "{check}: {shown}"
        );
    }
    // The schema does not require spec.image; the Katalog's rule does, so ork sends nothing.
    assert!(
        shown.contains(
            "SKIP protocol: only the required fields: validation rule: spec.image is required"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("SKIP finalizing: the entry does not set remote.finalize: true"),
        "{shown}"
    );
    assert!(shown.contains("0 failed"), "{shown}");
    Ok(())
}

#[test]
fn the_orkestra_remote_example_service_conforms_with_its_token() -> Result<()> {
    let dir = temp("remote");
    let service = Reconciler::start(&example(), 0, dir.join("service.log"))?;
    let katalog = dir.join("katalog.yaml");
    std::fs::write(&katalog, katalog_on_port(service.port)?)?;
    for f in ["crd.yaml", "cr.yaml", "setup.yaml"] {
        std::fs::copy(example().join(f), dir.join(f))?;
    }
    let token = dir.join("token");
    std::fs::write(&token, "ork-demo-token\n")?;
    let secret = format!("webapp-reconciler-token/token={}", token.display());
    let out = ork(
        &dir,
        &[
            "conform",
            "-k",
            &katalog.to_string_lossy(),
            "--entry",
            "webapp",
            "--secret",
            &secret,
        ],
    );
    let shown = text(&out);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("requests made from crdFile"),
        "the CRD came from crdFile: {shown}"
    );
    assert!(
        shown.contains(
            "PASS protocol: only the required fields: orkestra-remote/conform-minimal: the answer follows protocol v1"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("PASS large object: a request of 1.3 MiB (spec.image holds the bulk)"),
        "{shown}"
    );
    assert!(shown.contains("PASS concurrency: "), "{shown}");
    assert!(shown.contains("0 failed"), "{shown}");
    let calls = service.calls();
    assert!(
        calls.len() >= 8 && calls.iter().all(|c| c["authorized"] == true),
        "every request carried the token: {calls:?}"
    );
    Ok(())
}

/// A Python service, written as its author would, listening on `$PORT` (its first line names the
/// port): `answer_py` defines `answer(path, request)`, each POST's JSON answer, or `None` to
/// close the connection without one.
fn python_service(dir: &Path, name: &str, answer_py: &str) -> Result<PathBuf> {
    let script = dir.join(format!("{name}.py"));
    std::fs::write(
        &script,
        format!(
            r#"import json, os, socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
{answer_py}
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{{}}")
        answered = answer(self.path, req)
        if answered is None:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        body = json.dumps(answered).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
s = ThreadingHTTPServer(("127.0.0.1", int(os.environ["PORT"])), H)
print("listening on 127.0.0.1:%d" % s.server_port, flush=True)
s.serve_forever()
"#
        ),
    )?;
    Ok(script)
}

/// A service that crashes on every request (closes the connection) or refuses every CR with
/// `result: error`.
fn write_service(dir: &Path, mode: &str) -> Result<PathBuf> {
    let answer = if mode == "crash" {
        "def answer(path, req):\n    return None\n"
    } else {
        "def answer(path, req):\n    return {\"result\": \"error\", \"error\": \"no quota for this tenant\"}\n"
    };
    python_service(dir, mode, answer)
}

/// Issue 46 (5): FAIL lines carried the transport error alone, the concurrency check blamed
/// concurrency when each request failed on its own, and `result: error` counted as PASS with
/// nothing said.
#[test]
fn conform_names_the_values_a_service_failed_on_and_blames_nothing_else() -> Result<()> {
    // `ork conform` of the entry `gadget` against a service in `mode`: its report, after
    // checking that the run failed.
    let report = |mode: &str| -> Result<String> {
        let dir = temp(mode);
        let service = Python::start(&write_service(&dir, mode)?)?;
        let katalog = faulty_katalog(&dir, service.port)?;
        let katalog = katalog.to_string_lossy();
        let out = ork(&dir, &["conform", "-k", &katalog, "--entry", "gadget"]);
        let shown = text(&out);
        anyhow::ensure!(!out.status.success(), "{mode}: the run must fail: {shown}");
        Ok(shown)
    };
    let shown = report("crash")?;
    let protocol = section(&shown, "protocol: every field of the schema").join("\n");
    assert!(
        protocol.contains("closed the connection without answering")
            && protocol.contains("sent for a CR with spec {"),
        "the failure names the request's values: {protocol}"
    );
    let concurrency = section(&shown, "concurrency").join("\n");
    assert!(
        concurrency
            .starts_with("SKIP concurrency: each request that failed at once failed alone too"),
        "{shown}"
    );

    let shown = report("refuses")?;
    let protocol = section(&shown, "protocol: every field of the schema").join("\n");
    assert!(
        protocol.starts_with("FAIL protocol: every field of the schema:")
            && protocol.contains("result: error for a CR its schema allows")
            && protocol.contains("the service's error: no quota for this tenant"),
        "{shown}"
    );
    Ok(())
}

/// A service that reconciles gadgets and answers their admission at `/admit`: the mutation
/// defaults `colour` (`settles`), or stamps a fresh counter into a label on every call (a
/// mutation that never settles); the validation denies a `note` of `forbidden`.
fn write_admission_service(dir: &Path, settles: bool) -> Result<PathBuf> {
    let mutation = if settles {
        r#"patch = [] if "colour" in spec else [{"op": "add", "path": "/spec/colour", "value": "red"}]"#
    } else {
        r#"COUNT[0] += 1; patch = [{"op": "add", "path": "/metadata/labels", "value": {"stamp": str(COUNT[0])}}]"#
    };
    let answer = format!(
        r#"COUNT = [0]
def answer(path, req):
    if path != "/admit":
        return {{"result": "ok", "status": {{"seen": True}}, "resources": []}}
    spec = (req.get("object") or {{}}).get("spec") or {{}}
    if req.get("phase") == "mutate":
        {mutation}
        return {{"allowed": True, "patch": patch}}
    if spec.get("note") == "forbidden":
        return {{"allowed": False, "message": "note may not be forbidden"}}
    return {{"allowed": True}}
"#
    );
    python_service(dir, &format!("admission-{settles}"), &answer)
}

/// SPEC §21 offline: an entry with `remote.admission` gets the admission checks beside the
/// reconcile's; a mutation that patches again on its own output fails the idempotence check
/// with the patch it sent, one that settles passes every check.
#[test]
fn conform_checks_the_admission_path_and_a_mutation_that_never_settles() -> Result<()> {
    let report = |settles: bool| -> Result<(bool, String)> {
        let dir = temp(&format!("admission-{settles}"));
        let service = Python::start(&write_admission_service(&dir, settles)?)?;
        let katalog = faulty_katalog(&dir, service.port)?;
        let text_of = std::fs::read_to_string(&katalog)?;
        std::fs::write(
            &katalog,
            text_of.replace(
                "            finalize: true\n",
                "            finalize: false\n            admission: {mutate: true}\n",
            ),
        )?;
        anyhow::ensure!(
            std::fs::read_to_string(&katalog)?.contains("admission: {mutate: true}"),
            "the fixture asks for admission"
        );
        let out = ork(
            &dir,
            &[
                "conform",
                "-k",
                &katalog.to_string_lossy(),
                "--entry",
                "gadget",
            ],
        );
        Ok((out.status.success(), text(&out)))
    };
    let (passed, shown) = report(true)?;
    assert!(
        shown.contains("PASS protocol: every field of the schema"),
        "the reconcile checks ran: {shown}"
    );
    for check in [
        "admission: a create with every field",
        "admission: a create with only the required fields",
        "admission: the mutation is idempotent",
        "admission: an update that changes nothing",
        "admission: a dry run is judged as the write",
    ] {
        assert!(
            shown.contains(&format!("PASS {check}: ")),
            "{check}: {shown}"
        );
    }
    assert!(
        shown.contains("PASS admission: a create with only the required fields: allowed with a patch of 1 operation(s)"),
        "the minimal sample has no colour, so it is defaulted: {shown}"
    );
    assert!(passed, "a settling mutation conforms: {shown}");

    let (passed, shown) = report(false)?;
    assert!(!passed, "a mutation that never settles fails: {shown}");
    let idempotent = section(&shown, "admission: the mutation is idempotent").join("\n");
    assert!(
        idempotent.starts_with(
            "FAIL admission: the mutation is idempotent: the mutation does not settle"
        ) && idempotent.contains("the second pass patches again")
            && idempotent.contains("\"stamp\""),
        "{shown}"
    );
    Ok(())
}
