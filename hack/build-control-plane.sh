#!/usr/bin/env bash
# Build (from source, through the Go module proxy) and cache the binaries of a
# local Kubernetes control plane used by e2e tests and benchmarks:
#
#   kube-apiserver kube-controller-manager kube-scheduler   (k8s.io/kubernetes)
#   kubectl                                                 (k8s.io/kubernetes, same version: no skew)
#   etcd                                                    (go.etcd.io/etcd/server/v3, or Debian's etcd-server)
#   kwok                                                    (sigs.k8s.io/kwok/cmd/kwok)
#   helm                                                    (helm.sh/helm/v3/cmd/helm)
#
# Output: ${PY_VOLCANO_CACHE:-$HOME/.cache/py-volcano}/bin/<name>, each with a
# stamp file bin/.<name>.stamp holding "<module>@<version>". A binary whose
# stamp matches the pinned version is not rebuilt, so a warm run takes seconds.
#
# Usage: hack/build-control-plane.sh [--force] [--print-bin-dir] [NAME...]
#   NAME      build only these (default: all of the above)
#   --force   rebuild even when the stamp matches
#
# Environment:
#   PY_VOLCANO_CACHE  cache root (default $HOME/.cache/py-volcano)
#   ETCD_SOURCE       go (default): build etcd from the pinned Go module;
#                     apt: use Debian's etcd-server package (apt-get install when
#                     `etcd` is missing).  Debian 12 ships etcd 3.4.23, older than
#                     the minimum Kubernetes 1.36 supports (3.5.24), hence go.
#   GO                go binary (default: `go` on PATH, else /usr/local/go/bin/go)
#
# GOMODCACHE / GOCACHE are left at their defaults so caches are shared and reused.
set -euo pipefail

# ---- pinned versions --------------------------------------------------------
# Newest v1.36.x that the Go module proxy serves *and* the checksum database
# verifies (v1.36.5 is on the proxy but not yet in sum.golang.org).
KUBE_VERSION="v1.36.4"
KUBE_STAGING_VERSION="v0.36.4"          # k8s.io/<staging> modules for KUBE_VERSION
ETCD_VERSION="v3.6.16"                  # latest 3.6.x; kubeadm 1.36 defaults to 3.6.8
KWOK_VERSION="v0.8.0"
HELM_VERSION="v3.22.0"
# -----------------------------------------------------------------------------

ALL_COMPONENTS=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok helm)

CACHE_DIR="${PY_VOLCANO_CACHE:-$HOME/.cache/py-volcano}"
BIN_DIR="$CACHE_DIR/bin"
BUILD_ROOT="$CACHE_DIR/build"
ETCD_SOURCE="${ETCD_SOURCE:-go}"

FORCE=0
WANT=()
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    --print-bin-dir) echo "$BIN_DIR"; exit 0 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    -*) echo "unknown flag: $arg" >&2; exit 2 ;;
    *) WANT+=("$arg") ;;
  esac
done
if [ ${#WANT[@]} -eq 0 ]; then WANT=("${ALL_COMPONENTS[@]}"); fi
for w in "${WANT[@]}"; do
  case " ${ALL_COMPONENTS[*]} " in *" $w "*) ;; *) echo "unknown component: $w" >&2; exit 2 ;; esac
done

mkdir -p "$BIN_DIR" "$BUILD_ROOT"

# One build at a time per cache (parallel test sessions may all call this).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE_DIR/.build.lock"
  if ! flock -n 9; then
    echo "==> waiting for another build-control-plane.sh on $CACHE_DIR"
    flock 9
  fi
fi

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"; else GO=/usr/local/go/bin/go; fi
fi

need_go() {
  if ! [ -x "$GO" ] && ! command -v "$GO" >/dev/null 2>&1; then
    echo "build-control-plane: Go toolchain not found (set GO=/path/to/go)" >&2
    exit 1
  fi
  GO_VERSION="$("$GO" env GOVERSION)"            # e.g. go1.26.8
  local mm="${GO_VERSION#go}"; local major="${mm%%.*}"; local rest="${mm#*.}"; local minor="${rest%%[.a-z]*}"
  if [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "$minor" -ge 27 ]; }; then
    # Kubernetes 1.36 does not build with encoding/json/v2 as the default yet.
    export GOEXPERIMENT="${GOEXPERIMENT:+$GOEXPERIMENT,}nojsonv2"
  fi
  export GOFLAGS="-mod=mod"
  export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
  export CGO_ENABLED="${CGO_ENABLED:-0}"
}

stamp_file() { echo "$BIN_DIR/.$1.stamp"; }

is_current() { # name want-stamp
  local f; f="$(stamp_file "$1")"
  [ "$FORCE" -eq 0 ] && [ -x "$BIN_DIR/$1" ] && [ -f "$f" ] && [ "$(cat "$f")" = "$2" ]
}

# make_module DIR MODULE VERSION [extra go.mod lines...]
make_module() {
  local dir="$1" mod="$2" ver="$3"; shift 3
  mkdir -p "$dir"
  {
    echo "module py-volcano.local/build/$(basename "$dir")"
    echo
    echo "go 1.26"
    echo
    echo "require $mod $ver"
    for line in "$@"; do echo "$line"; done
  } > "$dir/go.mod.new"
  # Keep go.sum when the go.mod is unchanged (faster, and no re-resolution).
  if ! cmp -s "$dir/go.mod.new" "$dir/go.mod"; then
    mv "$dir/go.mod.new" "$dir/go.mod"
    rm -f "$dir/go.sum"
  else
    rm -f "$dir/go.mod.new"
  fi
}

# go_build NAME DIR PKG STAMP LDFLAGS_EXTRA
go_build() {
  local name="$1" dir="$2" pkg="$3" stamp="$4" ldx="$5"
  local t0 t1
  t0=$(date +%s)
  echo "==> building $name ($stamp)"
  (
    cd "$dir"
    "$GO" build -trimpath -ldflags="-s -w $ldx" -o "$BIN_DIR/$name.tmp" "$pkg"
  )
  mv -f "$BIN_DIR/$name.tmp" "$BIN_DIR/$name"
  echo "$stamp" > "$(stamp_file "$name")"
  t1=$(date +%s)
  printf '==> built %s in %ds (%s)\n' "$name" "$((t1 - t0))" "$(du -h "$BIN_DIR/$name" | cut -f1)"
}

# --- kubernetes ------------------------------------------------------------
kube_module_ready=0
prepare_kube_module() {
  [ "$kube_module_ready" -eq 1 ] && return 0
  local dir="$BUILD_ROOT/kubernetes"
  local gomod
  gomod="$(cd "$BUILD_ROOT" && GOFLAGS= "$GO" mod download -json "k8s.io/kubernetes@$KUBE_VERSION" \
    | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  if [ -z "$gomod" ] || [ ! -f "$gomod" ]; then
    echo "build-control-plane: cannot download k8s.io/kubernetes@$KUBE_VERSION go.mod" >&2
    exit 1
  fi
  # k8s.io/kubernetes replaces its staging modules with ./staging/src/k8s.io/<x>;
  # mirror that with the published k8s.io/<x> $KUBE_STAGING_VERSION modules.
  # Only the staging modules it also requires are in the build graph; the rest
  # (sample-cli-plugin, sample-controller) are not published for every release.
  local required replaces=() m
  required="$(awk '/^require \(/{r=1;next} r&&/^\)/{r=0} r{print $1}' "$gomod")"
  for m in $(sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/src/.*#\1#p' "$gomod"); do
    if grep -qx "$m" <<<"$required"; then
      replaces+=("replace $m => $m $KUBE_STAGING_VERSION")
    fi
  done
  echo "==> k8s.io/kubernetes@$KUBE_VERSION: ${#replaces[@]} staging modules pinned to $KUBE_STAGING_VERSION"
  make_module "$dir" k8s.io/kubernetes "$KUBE_VERSION" "${replaces[@]}"
  kube_module_ready=1
}

kube_ldflags() {
  local v="${KUBE_VERSION#v}" major minor
  major="${v%%.*}"; minor="${v#*.}"; minor="${minor%%.*}"
  local date; date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  local out="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    out+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    out+=" -X $p.gitTreeState=clean -X $p.gitCommit=unknown -X $p.buildDate=$date"
  done
  echo "$out"
}

build_kube() { # name
  local name="$1" stamp="k8s.io/kubernetes@$KUBE_VERSION"
  if is_current "$name" "$stamp"; then echo "==> $name $KUBE_VERSION up to date"; return 0; fi
  need_go
  prepare_kube_module
  go_build "$name" "$BUILD_ROOT/kubernetes" "k8s.io/kubernetes/cmd/$name" "$stamp" "$(kube_ldflags)"
}

# --- etcd ---------------------------------------------------------------------
build_etcd() {
  if [ "$ETCD_SOURCE" = apt ]; then
    local stamp="debian:etcd-server"
    if ! command -v etcd >/dev/null 2>&1; then
      echo "==> installing Debian etcd-server"
      local t0; t0=$(date +%s)
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq etcd-server
      # The package enables a system service on 127.0.0.1:2379; we run our own.
      (systemctl disable --now etcd >/dev/null 2>&1 || service etcd stop >/dev/null 2>&1) || true
      echo "==> installed etcd-server in $(( $(date +%s) - t0 ))s"
    fi
    ln -sf "$(command -v etcd)" "$BIN_DIR/etcd"
    echo "$stamp" > "$(stamp_file etcd)"
    echo "==> etcd from Debian: $("$BIN_DIR/etcd" --version | head -1)"
    return 0
  fi
  local stamp="go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  if is_current etcd "$stamp"; then echo "==> etcd $ETCD_VERSION up to date"; return 0; fi
  [ -L "$BIN_DIR/etcd" ] && rm -f "$BIN_DIR/etcd"
  need_go
  local r=()
  local m
  for m in api/v3 client/pkg/v3 client/v3 pkg/v3; do
    r+=("require go.etcd.io/etcd/$m $ETCD_VERSION")
  done
  make_module "$BUILD_ROOT/etcd" go.etcd.io/etcd/server/v3 "$ETCD_VERSION" "${r[@]}"
  go_build etcd "$BUILD_ROOT/etcd" go.etcd.io/etcd/server/v3 "$stamp" ""
}

# --- kwok ---------------------------------------------------------------------
# The kwok binary has no built-in stages (kwokctl normally generates them), so
# the Stage manifests of the pinned release are copied next to the binaries:
# $CACHE_DIR/share/kwok/stage/{node,pod,volume}/...
install_kwok_stages() {
  local stamp="sigs.k8s.io/kwok@$KWOK_VERSION" dest="$CACHE_DIR/share/kwok"
  if [ "$FORCE" -eq 0 ] && [ -f "$dest/.stamp" ] && [ "$(cat "$dest/.stamp")" = "$stamp" ]; then return 0; fi
  need_go
  local src
  src="$(cd "$BUILD_ROOT" && GOFLAGS= "$GO" mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  if [ -z "$src" ] || [ ! -d "$src/kustomize/stage" ]; then
    echo "build-control-plane: kwok stages not found in sigs.k8s.io/kwok@$KWOK_VERSION" >&2
    exit 1
  fi
  rm -rf "$dest"
  mkdir -p "$dest"
  (cd "$src/kustomize" && find stage -name '*.yaml' ! -name kustomization.yaml ! -path '*/testdata/*' \
    -exec cp --parents {} "$dest/" \;)
  chmod -R u+w "$dest"
  echo "$stamp" > "$dest/.stamp"
  echo "==> kwok stages installed in $dest"
}

build_kwok() {
  local stamp="sigs.k8s.io/kwok@$KWOK_VERSION"
  if is_current kwok "$stamp"; then
    echo "==> kwok $KWOK_VERSION up to date"
  else
    need_go
    make_module "$BUILD_ROOT/kwok" sigs.k8s.io/kwok "$KWOK_VERSION"
    go_build kwok "$BUILD_ROOT/kwok" sigs.k8s.io/kwok/cmd/kwok "$stamp" \
      "-X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}"
  fi
  install_kwok_stages
}

# --- helm ---------------------------------------------------------------------
build_helm() {
  local stamp="helm.sh/helm/v3@$HELM_VERSION"
  if is_current helm "$stamp"; then echo "==> helm $HELM_VERSION up to date"; return 0; fi
  need_go
  make_module "$BUILD_ROOT/helm" helm.sh/helm/v3 "$HELM_VERSION"
  go_build helm "$BUILD_ROOT/helm" helm.sh/helm/v3/cmd/helm "$stamp" \
    "-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
}

T_START=$(date +%s)
for w in "${WANT[@]}"; do
  case "$w" in
    kube-*|kubectl) build_kube "$w" ;;
    etcd) build_etcd ;;
    kwok) build_kwok ;;
    helm) build_helm ;;
  esac
done
echo "==> control-plane binaries in $BIN_DIR ($(du -shL "$BIN_DIR" 2>/dev/null | cut -f1)), total $(( $(date +%s) - T_START ))s"
