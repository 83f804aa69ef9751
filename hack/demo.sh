#!/usr/bin/env bash
# Bring py-volcano up on a local cluster with a demo workload, on a fresh machine:
# a real kube-apiserver + etcd + kube-controller-manager + kwok (built from source and cached),
# the CRDs, four fake nodes, `py-volcano run` as a local process (scheduler and PodGroup controller),
# and deploy/demo/workload.yaml.
# It prints what the scheduler did, then keeps the scheduler running until Ctrl-C and tears
# everything down. DEMO_SECONDS=N stops it after N seconds instead (used by the e2e test).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install --quiet -e '.[dev]' >"${TMPDIR:-/tmp}/py-volcano-pip.log" 2>&1 || { cat "${TMPDIR:-/tmp}/py-volcano-pip.log"; exit 1; }
bash hack/build-control-plane.sh >/dev/null

work=.e2e/demo
export PY="$PWD/.venv/bin/python"
cleanup() {
  [ -n "${scheduler_pid:-}" ] && kill "$scheduler_pid" 2>/dev/null && wait "$scheduler_pid" 2>/dev/null || true
  "$PY" -m e2e.controlplane down --work-dir "$work" >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

echo "== starting the control plane (kube-apiserver, etcd, kube-controller-manager, kwok)"
"$PY" -m e2e.controlplane up --work-dir "$work"
eval "$("$PY" -m e2e.controlplane env --work-dir "$work")"
kubectl="$(bash hack/build-control-plane.sh --print-bin-dir)/kubectl"

echo "== installing the CRDs and the demo nodes"
"$kubectl" apply -f crds/ >/dev/null
"$kubectl" wait --for condition=established --timeout=60s crd/queues.scheduling.volcano.sh crd/podgroups.scheduling.volcano.sh >/dev/null
"$kubectl" apply -f deploy/demo/nodes.yaml >/dev/null

echo "== starting py-volcano (metrics on http://127.0.0.1:${DEMO_PORT:-8080}/metrics, log in $work/py-volcano.log)"
.venv/bin/py-volcano run --kubeconfig "$KUBECONFIG" --no-leader-elect --listen-address 127.0.0.1:${DEMO_PORT:-8080} \
  --log-format json >"$work/py-volcano.log" 2>&1 &
scheduler_pid=$!

echo "== applying the demo workload"
"$kubectl" apply -f deploy/demo/workload.yaml >/dev/null
sleep 8

echo "== pods"
"$kubectl" get pods -n demo -o wide
echo "== podgroups"
"$kubectl" get podgroups -n demo
echo "== queues"
"$kubectl" get queues
echo "== the Job render (batch/v1, group-min-member 4): one PodGroup made by the controller, bound whole"
render_group=$("$kubectl" get pods -n demo -l job-name=render -o jsonpath='{.items[0].metadata.annotations.scheduling\.k8s\.io/group-name}')
"$kubectl" get podgroup "$render_group" -n demo
"$kubectl" get pods -n demo -l job-name=render \
  -o custom-columns='POD:.metadata.name,PODGROUP:.metadata.annotations.scheduling\.k8s\.io/group-name,NODE:.spec.nodeName'
echo "== why too-big waits"
"$kubectl" get podgroup too-big -n demo -o jsonpath='{range .status.conditions[*]}{.type}: {.message}{"\n"}{end}'
echo "== queue metrics"
curl -s http://127.0.0.1:${DEMO_PORT:-8080}/metrics | grep -E '^volcano_queue_(allocated_milli_cpu|deserved_milli_cpu|share)' || true

if [ -n "${DEMO_SECONDS:-}" ]; then
  sleep "$DEMO_SECONDS"
else
  echo "== py-volcano keeps scheduling; KUBECONFIG=$KUBECONFIG; Ctrl-C to stop and tear down"
  wait "$scheduler_pid"
fi
