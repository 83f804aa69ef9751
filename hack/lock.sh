#!/usr/bin/env bash
# Regenerate the dependency locks from pyproject.toml: every package pinned, every file's sha256 listed.
#   requirements.lock      the scheduler's dependencies and its build backend (the image installs these)
#   requirements-dev.lock  the same plus the dev extra (hack/test.sh, hence CI, installs these)
# Both are installed with `pip install --require-hashes`: a package whose file does not match is refused.
# pip-compile (pip-tools, the usual tool for hashed requirement files) runs from a throwaway virtualenv;
# it is not a dependency of the project. Run after changing a dependency in pyproject.toml; a unit test
# (tests/unit/deploy/test_locks.py) fails while the locks disagree with pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools/venv"
"$tools/venv/bin/pip" install --quiet pip-tools
compile() {
  CUSTOM_COMPILE_COMMAND="hack/lock.sh" "$tools/venv/bin/pip-compile" --quiet --generate-hashes \
    --allow-unsafe --strip-extras --no-emit-index-url --all-build-deps "$@" pyproject.toml
}
compile --output-file requirements.lock
compile --extra dev --output-file requirements-dev.lock
