#!/usr/bin/env python3
"""A reconcile service that breaks the protocol on purpose, for the tests of `ork conform`.

Its answers are valid protocol v1, but it has four planted faults:
- not idempotent: each answer carries a counter (the ConfigMap's data.served), so the same
  request never gets the same answer twice;
- it ignores `prepared.finalizing`: it never answers `finalized: true`;
- it breaks on unknown request fields: HTTP 500 when the request has a field it does not know,
  at the top or inside `prepared`;
- it is slow under concurrency: while more than one request is in flight it sleeps SLOW seconds,
  longer than the Katalog's timeout.

Standard library only. Listens on 127.0.0.1:PORT (default 0: the system chooses; the first line
it prints names the port).
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KNOWN = {"key", "gvk", "object", "args", "prepared"}
KNOWN_PREPARED = {"children", "cross", "sentinels", "validation", "health", "trigger", "finalizing"}
SLOW = float(os.environ.get("SLOW", "3"))
# How long a request waits for company before it answers: long enough for concurrent requests
# to see each other.
GATHER = 0.2

lock = threading.Lock()
state = {"served": 0, "in_flight": 0, "crowded_at": 0.0}


def reconcile(request, served):
    name = request["object"]["metadata"]["name"]
    return {
        "result": "ok",
        "status": {"phase": "Ready"},
        "resources": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name},
                "data": {"served": str(served)},
            }
        ],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        with lock:
            state["in_flight"] += 1
            if state["in_flight"] > 1:
                state["crowded_at"] = time.monotonic()
        try:
            self.serve()
        except (BrokenPipeError, ConnectionResetError):
            pass  # ork gave up waiting: the fault under test
        finally:
            with lock:
                state["in_flight"] -= 1

    def serve(self):
        arrived = time.monotonic()
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        request = json.loads(body)
        unknown = (set(request) - KNOWN) | (set(request.get("prepared", {})) - KNOWN_PREPARED)
        if unknown:
            return self.answer(500, b"unknown field: " + ",".join(sorted(unknown)).encode())
        time.sleep(GATHER)
        with lock:
            crowded = state["crowded_at"] >= arrived - GATHER
            state["served"] += 1
            served = state["served"]
        if crowded:
            time.sleep(SLOW)
        print(json.dumps({"key": request["key"], "served": served, "crowded": crowded}), flush=True)
        self.answer(200, json.dumps(reconcile(request, served)).encode())

    def answer(self, code, out):
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    print(f"faulty reconciler listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(0)
