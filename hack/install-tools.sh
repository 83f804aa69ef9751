#!/usr/bin/env bash
# Install the Debian packages the end-to-end tests use besides the control plane (which
# hack/build-control-plane.sh builds): a real Prometheus that scrapes py-volcano (e2e/test_prometheus.py);
# buildah and mmdebstrap, which build the image without a Docker daemon or an image registry, and
# podman with runc, which run it (e2e/test_image.py, hack/build-image.sh).
#
# A command already on PATH is left alone, so a warm run does nothing. Installing needs root and
# apt-get, as the CI machines have; anywhere else this names what is missing and fails.
set -euo pipefail

# command -> Debian package
declare -A PACKAGES=(
  [prometheus]=prometheus
  [buildah]=buildah
  [mmdebstrap]=mmdebstrap
  [podman]=podman
  [runc]=runc
)

missing=()
for command in "${!PACKAGES[@]}"; do
  command -v "$command" >/dev/null 2>&1 || missing+=("${PACKAGES[$command]}")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-tools: missing ${missing[*]}; install them (Debian: apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "==> apt-get install ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# A package's service is not started here (policy-rc.d); the tests start their own instances.
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
