#!/usr/bin/env python3
"""The example reconcile service: a WebApp becomes a Deployment and a Service.

It knows nothing about Kubernetes clients: it reads the request JSON and answers with the
children it wants. Standard library only. Listens on 127.0.0.1:$PORT (default 8025).
"""
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def reconcile(request):
    cr = request["object"]
    name = cr["metadata"]["name"]
    spec = cr.get("spec", {})
    image = spec.get("image")
    if not image:
        return {"result": "error", "error": "spec.image is empty"}
    port = int(spec.get("port", 8080))
    env = request.get("args", {}).get("environment", "dev")
    return {
        "result": "ok",
        "status": {"phase": "Ready", "url": f"http://{name}:{port}", "environment": env},
        "resources": [
            # Intent form: ork builds the Deployment.
            {
                "type": "deployment",
                "fields": {
                    "name": name,
                    "image": image,
                    "replicas": int(spec.get("replicas", 1)),
                    "port": port,
                    "env": {"ENVIRONMENT": env},
                },
            },
            # Full form: any object of a declared type.
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "labels": {"app": name}},
                "spec": {
                    "selector": {"orkestra-owner": name},
                    "ports": [{"name": "http", "port": port, "targetPort": port, "protocol": "TCP"}],
                },
            },
        ],
        "events": [{"type": "Normal", "reason": "Planned", "message": f"{name}: deployment + service"}],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = json.loads(body)
        trigger = request.get("prepared", {}).get("trigger", {})
        print(f"reconcile {request['key']} trigger={trigger.get('reason')}", flush=True)
        out = json.dumps(reconcile(request)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    port = int(os.environ.get("PORT", "8025"))
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    # PORT=0 lets the system choose; the line says which port it is.
    print(f"example reconciler listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
