#!/usr/bin/env bash
# The one test command (README, .ci/run): set up the virtualenv, build or reuse the
# local control plane (real kube-apiserver, etcd, kube-controller-manager, kwok, helm),
# then check the code (ruff, mypy --strict, import-linter) and run every test: unit, scenarios
# (in memory) and end-to-end (against the API server).
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# Dependencies from the lock (pinned, hash-checked: hack/lock.sh), then the project itself without
# touching them, built by the locked setuptools.
.venv/bin/python -m pip install --quiet --require-hashes -r requirements-dev.lock
.venv/bin/python -m pip install --quiet --no-deps --no-build-isolation -e .

if ! bash hack/build-control-plane.sh; then
  echo "error: the local Kubernetes control plane could not be built; e2e tests cannot run" >&2
  exit 1
fi
if ! bash hack/install-tools.sh; then
  echo "error: the e2e tools (Prometheus, buildah, mmdebstrap, podman) could not be installed" >&2
  exit 1
fi

echo "== lint: ruff, mypy --strict, import-linter layer contracts"
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/lint-imports --no-cache >/dev/null

# Two workers (pytest-xdist, the usual plugin for parallel pytest), each test file whole on one worker:
# each worker starts its own control plane, and an e2e file's tests share their module's fixtures. Most
# e2e time is spent waiting on cycles and API calls, so two workers roughly halve the run on 2 cores.
# PYTEST_WORKERS=0 runs everything in one process.
.venv/bin/python -m pytest -n "${PYTEST_WORKERS:-2}" --dist loadfile tests e2e "$@"
