#!/usr/bin/env python3
"""The bench's reconcile service, the same for every system: a Widget becomes two ConfigMaps
and a status. Standard library only; HTTP/1.1 keep-alive on 127.0.0.1.

POST /reconcile  {"object": <Widget>, ...}  -> {"result": "ok", "status": {...}, "resources": [2 ConfigMaps]}
POST /admit      {"phase": "validate", "object": <Widget>, ...} -> {"allowed": true} (not counted)
GET  /calls      -> the number of POSTs answered so far (the service-side call counter)
GET  /span/K/M   -> seconds between the K-th and the M-th POST answered
GET  /times/K/M  -> when each of the K-th to the M-th POST was answered, in seconds after the K-th

Prints the port it listens on as its first line of stdout.
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CALLS = 0
TIMES = []  # when each call was answered (time.monotonic)
LOCK = threading.Lock()


def reconcile(request):
    cr = request["object"]
    name = cr["metadata"]["name"]
    spec = cr.get("spec") or {}
    size = int(spec.get("size", 1))
    color = str(spec.get("color", "blue"))
    return {
        "result": "ok",
        "status": {"phase": "Ready", "size": size, "configMaps": 2},
        "resources": [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{name}-config", "labels": {"widget": name}},
                "data": {"size": str(size), "color": color},
            },
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{name}-env", "labels": {"widget": name}},
                "data": {"WIDGET": name, "COLOR": color},
            },
        ],
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body are two writes: without TCP_NODELAY, Nagle and the client's delayed ACK
    # add ~40 ms to every call.
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/calls":
            with LOCK:
                self.reply(200, {"calls": CALLS})
        elif self.path.startswith("/span/"):
            # /span/K/M: seconds from the K-th call to the M-th (1-based), by this clock, so a
            # poller that was slow to be served still measures a burst exactly.
            try:
                k, m = (int(x) for x in self.path.split("/")[2:4])
                with LOCK:
                    span = TIMES[m - 1] - TIMES[k - 1]
            except (ValueError, IndexError):
                self.reply(404, {"error": "no such calls"})
                return
            self.reply(200, {"seconds": span})
        elif self.path.startswith("/times/"):
            try:
                k, m = (int(x) for x in self.path.split("/")[2:4])
                with LOCK:
                    times = [t - TIMES[k - 1] for t in TIMES[k - 1 : m]]
            except (ValueError, IndexError):
                self.reply(404, {"error": "no such calls"})
                return
            self.reply(200, {"seconds": times})
        else:
            self.reply(404, {"error": "not found"})

    def do_POST(self):
        global CALLS
        length = int(self.headers.get("Content-Length") or 0)
        if self.path == "/admit":
            request = json.loads(self.rfile.read(length) or b"{}")
            allowed = isinstance(request.get("object"), dict)
            self.reply(200, {"allowed": allowed})
            return
        try:
            answer = reconcile(json.loads(self.rfile.read(length)))
        except Exception as e:  # a broken request is the caller's bug: say so
            self.reply(400, {"result": "error", "error": str(e)})
            return
        with LOCK:
            CALLS += 1
            TIMES.append(time.monotonic())
        self.reply(200, answer)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
