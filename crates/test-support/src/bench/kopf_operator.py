"""The peer: a kopf operator doing the bench's job (written by ork-bench; run with `kopf run`).

On create/update of a Widget it calls the bench's reconcile service, server-side applies the two
ConfigMaps it answers (owner references via kopf.adopt) and patches the status with kopf's own
patch (merged into the patch kopf writes after every handler). Tuning, chosen to be fair:
- async handlers and one keep-alive aiohttp session for the service and for the applies, at
  most BENCH_WORKERS (16, like ork's workers and the baseline's tasks) requests at a time;
- kopf's own per-object workers unlimited (its default: settings.queueing.worker_limit caps
  per-object workers, each of which holds its slot for idle_timeout after its work — a cap of
  16 ran at 16 CRs per 5 s);
- events: kopf's defaults (posting.loggers=False: handler log lines are not posted as Events);
- `kopf run --standalone --quiet -n NS` (no peering, warnings-only logging, one namespace).
With BENCH_RESYNC set (the idle-cost run), a kopf timer of that interval re-runs the same
reconcile, writing the status only when it differs.
"""
import os

import aiohttp
import kopf

SERVICE = os.environ["BENCH_SERVICE"]
WORKERS = int(os.environ.get("BENCH_WORKERS", "16"))
RESYNC = float(os.environ.get("BENCH_RESYNC", "0"))
GROUP, VERSION, PLURAL = "bench.ork.dev", "v1", "widgets"

session = None
server = None
auth = {}


@kopf.on.startup()
async def startup(settings, **_):
    global session, server, auth
    info = kopf.login_with_kubeconfig(settings=settings)
    server = info.server.rstrip("/")
    auth = {"Authorization": f"Bearer {info.token}"}
    ssl = False if info.insecure else None
    connector = aiohttp.TCPConnector(limit=WORKERS, ssl=ssl)
    session = aiohttp.ClientSession(connector=connector)


@kopf.on.cleanup()
async def cleanup(**_):
    if session is not None:
        await session.close()


async def reconcile(body, patch, namespace, name):
    request = {"key": f"{namespace}/{name}", "object": dict(body)}
    async with session.post(SERVICE, json=request) as r:
        r.raise_for_status()
        answer = await r.json()
    children = answer.get("resources") or []
    kopf.adopt(children, owner=body)
    for child in children:
        url = f"{server}/api/v1/namespaces/{namespace}/configmaps/{child['metadata']['name']}"
        params = {"fieldManager": "kopf-bench", "force": "true"}
        headers = {**auth, "Content-Type": "application/apply-patch+yaml"}
        async with session.patch(url, params=params, headers=headers, json=child) as r:
            if r.status >= 300:
                raise kopf.TemporaryError(f"apply {url}: {r.status} {await r.text()}", delay=1)
    status = answer.get("status") or {}
    current = dict(body.get("status") or {})
    if any(current.get(k) != v for k, v in status.items()):
        patch.status.update(status)


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL)
async def widget_changed(body, patch, namespace, name, **_):
    await reconcile(body, patch, namespace, name)


if RESYNC > 0:

    @kopf.timer(GROUP, VERSION, PLURAL, interval=RESYNC)
    async def widget_resync(body, patch, namespace, name, **_):
        await reconcile(body, patch, namespace, name)
