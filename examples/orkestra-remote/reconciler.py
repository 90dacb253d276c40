#!/usr/bin/env python3
"""The reconcile service of the orkestra-remote example: a WebApp becomes a Deployment and a
Service, answered as Orkestra intents ({"type", "fields"}); ork builds the objects.

Standard library only, no Kubernetes client. It refuses a call without the right Bearer token.

    RECONCILER_TOKEN=ork-demo-token python3 reconciler.py [--port 8026]

Settings: --port (or PORT, default 8026; the Katalog calls 127.0.0.1:8026) and RECONCILER_TOKEN
(default: the demo value of setup.yaml). Each call is logged as one JSON line on stdout.
"""
import argparse
import hmac
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEMO_TOKEN = "ork-demo-token"


def reconcile(request):
    """The decision: what a WebApp should consist of, and the status to report."""
    cr = request["object"]
    name = cr["metadata"]["name"]
    namespace = cr["metadata"].get("namespace", "default")
    spec = cr.get("spec") or {}
    args = request.get("args") or {}
    image = spec.get("image")
    if not image:
        return {"result": "error", "error": "spec.image is required"}
    replicas = int(spec.get("replicas", 1))
    port = int(spec.get("port", 8080))
    service = f"{name}-svc"
    return {
        "result": "ok",
        "status": {
            "phase": "Running",
            "replicas": replicas,
            "endpoint": f"http://{service}.{namespace}:{port}",
            "environment": args.get("environment", "development"),
        },
        "resources": [
            {
                "type": "deployment",
                "fields": {
                    "name": name,
                    "image": image,
                    "replicas": replicas,
                    "port": port,
                    "env": {"APP_ENV": args.get("environment", "development")},
                },
            },
            # ork selects the CR's pods (orkestra-owner: <CR name>) for a service intent.
            {
                "type": "service",
                "fields": {"name": service, "port": port, "targetPort": port},
            },
        ],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    token = DEMO_TOKEN

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        sent = self.headers.get("Authorization", "")
        authorized = hmac.compare_digest(sent.encode(), f"Bearer {self.token}".encode())
        request = json.loads(body) if authorized else {}
        log(
            {
                "key": request.get("key"),
                "authorized": authorized,
                "args": request.get("args"),
                "managedFieldsSent": "managedFields" in request.get("object", {}).get("metadata", {}),
            }
        )
        if not authorized:
            return self.answer(401, {"result": "error", "error": "missing or wrong bearer token"})
        return self.answer(200, reconcile(request))

    def answer(self, code, payload):
        out = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


def log(record):
    print(json.dumps(record, sort_keys=True), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8026")))
    options = parser.parse_args()
    Handler.token = os.environ.get("RECONCILER_TOKEN") or DEMO_TOKEN
    server = ThreadingHTTPServer(("127.0.0.1", options.port), Handler)
    # --port 0 lets the system choose; the line says which port it is.
    print(f"webapp reconciler listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
