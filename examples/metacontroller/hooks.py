#!/usr/bin/env python3
"""Metacontroller hooks, written as Metacontroller's own examples are: plain HTTP handlers that
read the request JSON and answer with the children and status they want. They run unchanged
under Metacontroller and under `ork run --metacontroller`.

Routes:
  /aggregate/customize, /aggregate/sync   ConfigMapAggregator (cluster-scoped, hooks v2):
      gathers every ConfigMap labelled as spec.selectLabels asks, in any namespace, into one
      ConfigMap spec.target.namespace/spec.target.name.
  /propagate/customize, /propagate/sync   GlobalConfigMap (cluster-scoped, hooks v1): copies
      the ConfigMap spec.source into every namespace labelled spec.namespaceLabel.
  /strategies/sync                         Rollout: a ConfigMap, a Secret and a ServiceAccount
      carrying spec.value, one per update strategy (hooks v1).
  /reservation/sync, /reservation/finalize Reservation: a ConfigMap; deletion is held until the
      parent carries the annotation example.ork.dev/release: "yes".
  /decorate/sync                           DecoratorController on Services it does not own
      (hooks v2): a label, an annotation with the port count, a ConfigMap listing the ports,
      and the label "stale" removed.

Standard library only. Listens on 127.0.0.1:$PORT (or --port; 0 picks one) and prints it.
"""
import base64
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def aggregate_customize(request):
    parent = request["parent"]
    labels = parent.get("spec", {}).get("selectLabels", {})
    return {"relatedResources": [
        {"apiVersion": "v1", "resource": "configmaps", "labelSelector": {"matchLabels": labels}},
    ]}


def aggregate_sync(request):
    parent = request["parent"]
    target = parent["spec"]["target"]
    data = {}
    # v2 keys: namespace/name, whatever namespace the source is in.
    for key, cm in sorted(request["related"].get("ConfigMap.v1", {}).items()):
        for k, v in sorted((cm.get("data") or {}).items()):
            data[f"{key.replace('/', '.')}.{k}"] = v
    child = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": target["name"], "namespace": target["namespace"]},
        "data": data,
    }
    return {"status": {"sources": len(request["related"].get("ConfigMap.v1", {})),
                       "keys": len(data)},
            "children": [child]}


def propagate_customize(request):
    spec = request["parent"]["spec"]
    return {"relatedResources": [
        {"apiVersion": "v1", "resource": "namespaces",
         "labelSelector": {"matchLabels": spec["namespaceLabel"]}},
        {"apiVersion": "v1", "resource": "configmaps",
         "namespace": spec["source"]["namespace"], "names": [spec["source"]["name"]]},
    ]}


def propagate_sync(request):
    parent = request["parent"]
    source = parent["spec"]["source"]
    related = request["related"]
    # v1 keys: cluster-scoped namespaces by name; the source ConfigMap, in another namespace
    # than the (cluster-scoped) parent's, as namespace/name.
    found = related.get("ConfigMap.v1", {}).get(f"{source['namespace']}/{source['name']}")
    if found is None:
        return {"status": {"copies": 0, "source": "missing"}, "children": []}
    copies = [
        {"apiVersion": "v1", "kind": "ConfigMap",
         "metadata": {"name": parent["metadata"]["name"], "namespace": ns},
         "data": found.get("data", {})}
        for ns in sorted(related.get("Namespace.v1", {}))
    ]
    return {"status": {"copies": len(copies), "source": "found"}, "children": copies}


def strategies_sync(request):
    parent = request["parent"]
    name = parent["metadata"]["name"]
    value = parent.get("spec", {}).get("value", "")
    children = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": f"{name}-ondelete"},
         "data": {"value": value}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": f"{name}-inplace"},
         "data": {"value": base64.b64encode(value.encode()).decode()}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": f"{name}-recreate", "annotations": {"example.ork.dev/value": value}}},
    ]
    # v1 keys: the child's name (all live in the parent's namespace).
    seen = sorted(request["children"].get("ConfigMap.v1", {}).keys())
    return {"status": {"value": value, "observedConfigMaps": seen}, "children": children}


def reservation_sync(request):
    parent = request["parent"]
    name = parent["metadata"]["name"]
    return {"status": {"phase": "Reserved"},
            "children": [{"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": f"{name}-ticket"}, "data": {"for": name}}]}


def reservation_finalize(request):
    parent = request["parent"]
    released = parent["metadata"].get("annotations", {}).get("example.ork.dev/release") == "yes"
    answer = reservation_sync(request)
    answer["status"] = {"phase": "Releasing"}
    answer["finalized"] = released and request.get("finalizing", False)
    if not answer["finalized"]:
        answer["resyncAfterSeconds"] = 1
    return answer


def decorate_sync(request):
    service = request["object"]
    name = service["metadata"]["name"]
    ports = service.get("spec", {}).get("ports", [])
    listed = ",".join(str(p.get("port")) for p in ports)
    return {
        "labels": {"decorated-by": "ork-example", "stale": None},
        "annotations": {"example.ork.dev/ports": str(len(ports))},
        "attachments": [{"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": f"{name}-ports"}, "data": {"ports": listed}}],
    }


ROUTES = {
    "/propagate/customize": propagate_customize,
    "/propagate/sync": propagate_sync,
    "/aggregate/customize": aggregate_customize,
    "/aggregate/sync": aggregate_sync,
    "/strategies/sync": strategies_sync,
    "/reservation/sync": reservation_sync,
    "/reservation/finalize": reservation_finalize,
    "/decorate/sync": decorate_sync,
}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        handler = ROUTES.get(self.path)
        if handler is None:
            self.send_response(404)
            self.end_headers()
            return
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        body = json.dumps(handler(request)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        print(f"{self.path} {fmt % args}", file=sys.stderr, flush=True)


def main():
    port = 8027
    if "--port" in sys.argv:
        port = int(sys.argv[sys.argv.index("--port") + 1])
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"metacontroller hooks on 127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
