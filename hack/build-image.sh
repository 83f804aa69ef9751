#!/usr/bin/env bash
# Build the py-volcano image from the repository's Dockerfile and print its size.
#
# usage: hack/build-image.sh [TAG]      (TAG defaults to py-volcano:<appVersion of charts/py-volcano>)
#
# With Docker (a daemon that answers `docker info`): `docker build`. Without: buildah, into the
# containers storage podman runs images from (`buildah bud --isolation chroot --layers`: every step
# whose inputs did not change is reused, so a rebuild after a code change only reinstalls the project).
#
# Environment:
#   BASE_IMAGE     the Dockerfile's BASE_IMAGE. Default with Docker: the Dockerfile's (python:3.11-slim).
#                  Default with buildah: a Debian bookworm rootfs holding python3, made by mmdebstrap
#                  from Debian's archive (no image registry needed) and imported as
#                  localhost/py-volcano-base:bookworm-<digest of its recipe>, made once per recipe.
#   BUILDER        docker or buildah (default: docker when its daemon answers, else buildah)
#   DEBIAN_MIRROR  mmdebstrap's mirror (default: its own, deb.debian.org)
#   PIP_CERT       (or SSL_CERT_FILE) a CA bundle the build's pip trusts, for a TLS-intercepting proxy
#                  (buildah only; mounted read-only into the build, not kept in the image)
set -euo pipefail
shopt -s inherit_errexit

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
app_version="$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$root/charts/py-volcano/Chart.yaml")"
tag="${1:-py-volcano:$app_version}"
image_path="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

builder="${BUILDER:-}"
if [[ -z "$builder" ]]; then
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then builder=docker; else builder=buildah; fi
fi

# The base for buildah without BASE_IMAGE: Debian's essential packages, python3 and its venv module,
# libstdc++ (NumPy's wheels need it; python:3.11-slim has it too). No apt, documentation, manual pages
# or translations, and not the full Perl that usrmerge pulls in (50 MB; the image runs no Perl).
debian_base() {
  local perl="usrmerge perl libperl5.36 perl-modules-5.36 libfile-find-rule-perl libnumber-compare-perl libtext-glob-perl"
  local recipe=(
    mmdebstrap --variant=essential --include=python3,python3-venv,libstdc++6
    --aptopt='APT::Install-Recommends "false"'
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*'
    --customize-hook="chroot \"\$1\" dpkg --purge --force-depends $perl"
    bookworm
  )
  local digest image
  digest="$(printf '%s\n' "${recipe[@]}" | sha256sum | cut -c1-12)"
  image="localhost/py-volcano-base:bookworm-$digest"
  if ! buildah inspect --type image "$image" >/dev/null 2>&1; then
    command -v mmdebstrap >/dev/null 2>&1 || { echo "build-image: mmdebstrap missing (bash hack/install-tools.sh)" >&2; exit 1; }
    local work container
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' RETURN
    echo "==> base image $image: ${recipe[*]}" >&2
    "${recipe[@]}" "$work/rootfs.tar" ${DEBIAN_MIRROR:+"$DEBIAN_MIRROR"} >&2
    container="$(buildah from scratch)"
    buildah add --quiet "$container" "$work/rootfs.tar" / >/dev/null
    buildah config --env "$image_path" --cmd /bin/sh "$container"
    buildah commit --quiet --rm "$container" "$image" >/dev/null
  fi
  echo "$image"
}

case "$builder" in
  docker)
    docker build ${BASE_IMAGE:+--build-arg "BASE_IMAGE=$BASE_IMAGE"} -t "$tag" "$root" >&2
    size="$(docker image inspect --format '{{.Size}}' "$tag")"
    ;;
  buildah)
    for tool in buildah podman; do
      command -v "$tool" >/dev/null 2>&1 || { echo "build-image: no Docker daemon, and $tool missing (bash hack/install-tools.sh)" >&2; exit 1; }
    done
    base="${BASE_IMAGE:-$(debian_base)}"
    # The CA bundle this host's pip trusts goes to the build's pip (a TLS-intercepting proxy to PyPI).
    ca="${PIP_CERT:-${SSL_CERT_FILE:-}}"
    trust=()
    if [[ -n "$ca" && -f "$ca" ]]; then trust=(--volume "$ca:/run/pip-ca.crt:ro" --build-arg PIP_CERT=/run/pip-ca.crt); fi
    echo "==> buildah bud $tag (BASE_IMAGE=$base)" >&2
    buildah bud --quiet --isolation chroot --layers --build-arg "BASE_IMAGE=$base" "${trust[@]}" -t "$tag" "$root" >&2
    size="$(podman image inspect --format '{{.Size}}' "$tag")"  # buildah's storage is podman's
    ;;
  *)
    echo "build-image: BUILDER must be docker or buildah, not $builder" >&2
    exit 2
    ;;
esac
echo "$tag $((size / 1024 / 1024)) MiB"
