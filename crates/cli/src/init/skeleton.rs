//! The reconcile service `ork init` writes: an HTTP service in Python (standard library only)
//! or a bash script for the exec transport, each answering a ConfigMap child and a status.

use super::plan::Plan;

const PYTHON: &str = r#"#!/usr/bin/env python3
"""The reconcile service of the __NAME__ operator, made by `ork init`.

ork POSTs a request for each __KIND__ (the CR in `object`, its children in `prepared.children`)
and applies what the answer says: the full set of children (`resources`) and the CR's `status`.
This one makes a ConfigMap per CR holding its spec. Standard library only; it listens on
127.0.0.1:$PORT (default __PORT__, the Katalog's endpoint).
"""
import json
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reconcile(request):
    cr = request["object"]
    name = cr["metadata"]["name"]
    if request.get("prepared", {}).get("finalizing"):
        # Only sent when the Katalog sets remote.finalize: true; nothing to clean up here.
        return {"result": "ok", "finalized": True}
    spec = cr.get("spec") or {}
    # ConfigMap keys are letters, digits, '-', '_' and '.'; values are strings.
    data = {
        re.sub(r"[^-._a-zA-Z0-9]", "-", key): value
        if isinstance(value, str)
        else json.dumps(value, sort_keys=True, separators=(",", ":"))
        for key, value in sorted(spec.items())
    }
    config = f"{name}-config"
    return {
        "result": "ok",
        # The whole desired set: a child no longer listed is pruned.
        "resources": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": config, "labels": {"app.kubernetes.io/part-of": name}},
                "data": data,
            }
        ],
        # Merged into the CR's .status; ork adds the Ready condition.
        "status": {"phase": "Ready", "configMap": config, "fields": len(data)},
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            answer = reconcile(json.loads(body))
        except Exception as e:  # an answer, not a closed connection: ork shows the message
            answer = {"result": "error", "error": f"{type(e).__name__}: {e}"}
        out = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "__PORT__"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    # PORT=0 lets the system choose; this line says which port it is.
    print(f"__NAME__ reconciler listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
"#;

pub fn python(plan: &Plan) -> String {
    PYTHON
        .replace("__NAME__", &plan.name)
        .replace("__KIND__", &plan.cr_type.kind)
        .replace("__PORT__", &plan.port.to_string())
}

const BASH: &str = r#"#!/usr/bin/env bash
# The reconcile script of the __NAME__ operator, made by `ork init`, for the exec transport: ork
# writes the request JSON (the __KIND__ in .object) to stdin and reads the answer from stdout:
# the full set of children (resources) and the CR's status. This one makes a ConfigMap per CR
# holding its spec. Exit code 0 means "answered"; stderr ends up in the CR's events otherwise.
set -euo pipefail

if ! command -v jq >/dev/null 2>&1; then
  printf '{"result":"error","error":"reconcile.sh needs jq on the PATH"}\n'
  exit 0
fi

exec jq -c '
  .object as $cr
  | $cr.metadata.name as $name
  | "\($name)-config" as $config
  | if (.prepared.finalizing // false) then
      {result: "ok", finalized: true}
    else
      ($cr.spec // {}) as $spec
      | { result: "ok",
          resources: [
            { apiVersion: "v1", kind: "ConfigMap",
              metadata: {name: $config, labels: {"app.kubernetes.io/part-of": $name}},
              data: ($spec | to_entries | sort_by(.key) | map({
                key: (.key | gsub("[^-._a-zA-Z0-9]"; "-")),
                value: (if (.value | type) == "string" then .value else (.value | tojson) end)
              }) | from_entries) }
          ],
          status: {phase: "Ready", configMap: $config, fields: ($spec | length)} }
    end'
"#;

pub fn bash(plan: &Plan) -> String {
    BASH.replace("__NAME__", &plan.name)
        .replace("__KIND__", &plan.cr_type.kind)
}
