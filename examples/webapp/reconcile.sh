#!/usr/bin/env bash
# The example reconciler in bash, for the exec transport: ork writes the request JSON to stdin
# and reads the answer from stdout. Exit code 0 means "answered"; anything on stderr ends up in
# the CR's events when the script fails.
#
# With jq installed it reads the request properly; without, it falls back to plain shell text
# matching, which is enough for this example's flat spec.
set -euo pipefail

request=$(cat)

if command -v jq >/dev/null 2>&1; then
  exec jq -c '
    .object as $cr
    | $cr.metadata.name as $name
    | ($cr.spec.port // 8080) as $port
    | (.args.environment // "dev") as $env
    | if ($cr.spec.image // "") == "" then
        {result: "error", error: "spec.image is empty"}
      else
        { result: "ok",
          status: {phase: "Ready", url: "http://\($name):\($port)", environment: $env},
          resources: [
            {type: "deployment",
             fields: {name: $name, image: $cr.spec.image, replicas: ($cr.spec.replicas // 1),
                      port: $port, env: {ENVIRONMENT: $env}}},
            {apiVersion: "v1", kind: "Service",
             metadata: {name: $name, labels: {app: $name}},
             spec: {selector: {"orkestra-owner": $name},
                    ports: [{name: "http", port: $port, targetPort: $port, protocol: "TCP"}]}}
          ],
          events: [{type: "Normal", reason: "Planned", message: "\($name): deployment + service"}] }
      end' <<<"$request"
fi

# Plain shell: the request is compact JSON with `key` first and the CR before `prepared`, so the
# first match of each field is the CR's own.
first() { grep -o "\"$1\":$2" <<<"$request" | head -n1 | sed -e "s/^\"$1\"://" -e 's/^"//' -e 's/"$//'; }
key=$(first key '"[^"]*"')
name=${key##*/}
image=$(first image '"[^"]*"' || true)
replicas=$(first replicas '[0-9]*' || true)
port=$(first port '[0-9]*' || true)
environment=$(grep -o '"args":{"environment":"[^"]*"' <<<"$request" | sed 's/.*:"//; s/"$//' || true)
replicas=${replicas:-1}
port=${port:-8080}
environment=${environment:-dev}

if [[ -z "$image" ]]; then
  printf '{"result":"error","error":"spec.image is empty"}\n'
  exit 0
fi

cat <<JSON
{"result":"ok",
 "status":{"phase":"Ready","url":"http://$name:$port","environment":"$environment"},
 "resources":[
  {"type":"deployment","fields":{"name":"$name","image":"$image","replicas":$replicas,"port":$port,"env":{"ENVIRONMENT":"$environment"}}},
  {"apiVersion":"v1","kind":"Service","metadata":{"name":"$name","labels":{"app":"$name"}},
   "spec":{"selector":{"orkestra-owner":"$name"},"ports":[{"name":"http","port":$port,"targetPort":$port,"protocol":"TCP"}]}}],
 "events":[{"type":"Normal","reason":"Planned","message":"$name: deployment + service"}]}
JSON
